// In-page helpers for the browser tests, installed as `window.__minijit` before JupyterLab loads
// (Playwright's add_init_script). They read JupyterLab's own models through
// `window.jupyterapp` (the server runs with `expose_app_in_browser`), so a DOM element is always
// mapped to the notebook cell, and the output model, it belongs to.
(() => {
  const WIDGET_VIEW = "application/vnd.jupyter.widget-view+json";
  // Elements that are ipywidgets *controls* (things a learner moves or presses).
  const CONTROL_KINDS = [
    ".widget-slider",
    ".widget-button",
    ".widget-toggle-button",
    ".widget-dropdown",
    ".widget-checkbox",
    ".widget-radio",
    ".widget-select",
    ".widget-text",
    ".widget-textarea",
    ".widget-toggle-buttons",
    ".widget-play",
    ".widget-colorpicker",
    ".widget-datepicker",
  ];
  const CONTROL_SELECTOR = CONTROL_KINDS.join(",");
  const WIDGET_FAILURE_TEXT = [
    "Error displaying widget",
    "Model not found",
    "model not found",
    "Failed to load model class",
    "Failed to load view class",
    "Failed to create view",
    "Javascript Error",
  ];

  const stripAnsi = (s) => String(s).replace(/\u001b\[[0-9;]*[A-Za-z]/g, "");

  // A small, fast string hash, so that snapshots of large PNG data URLs stay short.
  const hash = (s) => {
    let h = 2166136261 >>> 0;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 16777619) >>> 0;
    }
    return h.toString(16) + ":" + s.length;
  };

  const app = () => window.jupyterapp;

  const findPanel = (path) => {
    const a = app();
    if (!a || !a.shell) return null;
    for (const w of a.shell.widgets("main")) {
      if (w && w.context && w.context.path === path && w.content && w.sessionContext) {
        return w;
      }
    }
    return null;
  };

  const mustPanel = (path) => {
    const p = findPanel(path);
    if (!p) throw new Error(`notebook ${path} is not open in JupyterLab`);
    return p;
  };

  const children = (w) => {
    try {
      return Array.from(w.children());
    } catch (e) {
      return [];
    }
  };

  // Every OutputArea under a Lumino widget, the cell's own and those nested inside widgets
  // (ipywidgets' Output widget, which `interact` uses, is an OutputArea in the Lumino tree).
  const outputAreas = (root) => {
    const found = [];
    const walk = (w, depth) => {
      if (!w || depth > 60) return;
      const isArea =
        w.node &&
        w.node.classList &&
        w.node.classList.contains("jp-OutputArea") &&
        w.model &&
        typeof w.model.toJSON === "function";
      if (isArea) found.push(w);
      for (const c of children(w)) walk(c, depth + 1);
    };
    walk(root, 0);
    return found;
  };

  const cellTags = (cell) => {
    const m = cell.model;
    const tags = (m.getMetadata ? m.getMetadata("tags") : m.metadata && m.metadata.tags) || [];
    return Array.isArray(tags) ? tags : [];
  };

  const visible = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };

  // Hidden on purpose: a non-selected Tab page, a closed Accordion, `layout.display = "none"`.
  const deliberatelyHidden = (el) => {
    for (let e = el; e; e = e.parentElement) {
      if (e.classList && (e.classList.contains("lm-mod-hidden") || e.classList.contains("p-mod-hidden"))) {
        return true;
      }
      if (e.style && e.style.display === "none") return true;
      if (e.classList && e.classList.contains("jp-Cell")) break;
    }
    return false;
  };

  // Follow one kernel connection's messages: execute requests without a reply yet, and the
  // requests (by parent id) that made the kernel busy and have not made it idle yet.
  const watchKernel = (kernel) => {
    if (!kernel || kernel.__minijitWatch) return;
    const w = { pending: new Set(), busy: new Set() };
    kernel.__minijitWatch = w;
    kernel.anyMessage.connect((_, args) => {
      const msg = args.msg;
      const type = msg.header.msg_type;
      if (args.direction === "send") {
        if (type === "execute_request") w.pending.add(msg.header.msg_id);
        return;
      }
      const parent = msg.parent_header && msg.parent_header.msg_id;
      if (!parent) return;
      if (type === "execute_reply") w.pending.delete(parent);
      else if (type === "status" && msg.content.execution_state === "busy") w.busy.add(parent);
      else if (type === "status" && msg.content.execution_state === "idle") w.busy.delete(parent);
    });
  };

  const api = {
    ready(path) {
      const p = findPanel(path);
      return !!(p && p.context.isReady && p.content.widgets.length > 0);
    },

    // The kernel's state as the tests need it. "idle" only when the kernel says idle AND no
    // request is outstanding: every execute_request has its execute_reply, and every message
    // that made the kernel busy has made it idle again. The kernel's own status alone is not
    // enough: a control-channel message (the debugger's) turns it "idle" while a cell still
    // runs, and a queued cell has not made it busy yet.
    kernelStatus(path) {
      const p = findPanel(path);
      if (!p) return "no-panel";
      const sc = p.sessionContext;
      if (!sc.session) return sc.hasNoKernel ? "no-kernel" : "starting";
      const k = sc.session.kernel;
      if (!k) return "starting";
      watchKernel(k);
      if (k.connectionStatus !== "connected") return k.connectionStatus;
      if (k.status !== "idle") return k.status;
      const w = k.__minijitWatch;
      if (w.pending.size > 0) return `busy (${w.pending.size} cells queued or running)`;
      if (w.busy.size > 0) return `busy (${w.busy.size} requests)`;
      return "idle";
    },

    // Answer a "Select Kernel" dialog, should one open, with its default (the course kernel).
    acceptKernelDialog() {
      const dlg = document.querySelector(".jp-Dialog");
      if (!dlg) return false;
      const ok = dlg.querySelector(".jp-Dialog-footer .jp-mod-accept");
      if (ok) ok.click();
      return true;
    },

    // Run a notebook command (e.g. "notebook:run-all-cells") on this notebook; it resolves
    // when the cells it started have finished. Rejects after `timeoutMs`.
    async runCommand(path, command, timeoutMs) {
      const p = mustPanel(path);
      app().shell.activateById(p.id);
      await p.sessionContext.ready;
      watchKernel(p.sessionContext.session && p.sessionContext.session.kernel);
      // It resolves when its cells finished, or early (false) at the first error reply, even
      // an expected one: the caller then waits until no request is outstanding.
      const run = app().commands.execute(command);
      let timer;
      const limit = new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${command} did not finish in ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      try {
        const ok = await Promise.race([run, limit]);
        return ok === undefined ? null : ok;
      } finally {
        clearTimeout(timer);
      }
    },

    // Make cell `index` the active one (command mode), mark its node for Playwright locators.
    activateCell(path, index) {
      const p = mustPanel(path);
      app().shell.activateById(p.id);
      p.content.mode = "command";
      p.content.activeCellIndex = index;
      p.content.deselectAll();
      const cell = p.content.widgets[index];
      for (const el of document.querySelectorAll("[data-minijit-cell]")) {
        el.removeAttribute("data-minijit-cell");
      }
      cell.node.setAttribute("data-minijit-cell", String(index));
      cell.node.scrollIntoView({ block: "center" });
      return p.content.activeCellIndex;
    },

    // One cell as JupyterLab holds it: source, outputs (JSON), and the rendered output text.
    cell(path, index) {
      const p = mustPanel(path);
      const cell = p.content.widgets[index];
      const out = {
        index,
        type: cell.model.type,
        source: cell.model.sharedModel.getSource(),
        executionCount: cell.model.type === "code" ? cell.model.executionCount : null,
        outputs: [],
        text: "",
      };
      if (cell.model.type === "code") {
        out.outputs = cell.model.outputs.toJSON();
        out.text = cell.outputArea.node.innerText;
      }
      return out;
    },

    // What a check(...) cell shows: its rendered text, and the rows of its feedback table.
    feedback(path, index) {
      const p = mustPanel(path);
      const cell = p.content.widgets[index];
      const area = cell.outputArea.node;
      const table = area.querySelector(".jp-RenderedHTMLCommon table");
      const rows = table
        ? Array.from(table.querySelectorAll("tbody tr")).map((tr) => tr.innerText.trim())
        : [];
      const errors = cell.model.outputs
        .toJSON()
        .filter((o) => o.output_type === "error")
        .map((o) => `${o.ename}: ${stripAnsi(o.evalue)}`);
      return { text: area.innerText, table: table !== null, rows, errors };
    },

    // Count DOM mutations under the notebook; the test waits until none happen for a while.
    startMutationWatch(path) {
      const p = mustPanel(path);
      if (window.__minijitObserver) window.__minijitObserver.disconnect();
      window.__minijitLastMutation = performance.now();
      const obs = new MutationObserver(() => {
        window.__minijitLastMutation = performance.now();
      });
      obs.observe(p.node, { subtree: true, childList: true, attributes: true, characterData: true });
      window.__minijitObserver = obs;
    },

    quietFor(path, ms) {
      if (api.kernelStatus(path) !== "idle") return false;
      if (performance.now() - (window.__minijitLastMutation || 0) < ms) return false;
      const p = mustPanel(path);
      for (const img of p.content.node.querySelectorAll(".jp-OutputArea-output img")) {
        if (!img.complete) return false;
      }
      return true;
    },

    // Every cell: its index, type, tags, execution count, and source (first line), plus the
    // problems found in it. A problem is anything a learner would see as broken.
    report(path) {
      const p = mustPanel(path);
      const cells = [];
      p.content.widgets.forEach((cell, index) => {
        const tags = cellTags(cell);
        const type = cell.model.type;
        const info = {
          index,
          type,
          tags,
          source: cell.model.sharedModel.getSource().split("\n")[0].slice(0, 120),
          empty: cell.model.sharedModel.getSource().trim() === "",
          executionCount: type === "code" ? cell.model.executionCount : null,
          errors: [],
          widgetFailures: [],
          widgetViews: 0,
          widgetViewsRendered: 0,
          nestedAreas: 0,
          images: [],
          figuresAsText: [],
        };
        if (type !== "code") {
          cells.push(info);
          return;
        }
        const areas = outputAreas(cell);
        for (const area of areas) {
          const nested = area !== cell.outputArea;
          if (nested) info.nestedAreas += 1;
          const outputs = area.model.toJSON();
          const items = Array.from(area.widgets || []).filter((w) =>
            w.node.classList.contains("jp-OutputArea-child"),
          );
          outputs.forEach((out, k) => {
            if (out.output_type === "error") {
              info.errors.push({
                where: nested ? "widget output (e.g. an interact callback)" : "cell output",
                ename: out.ename,
                evalue: stripAnsi(out.evalue),
                traceback: stripAnsi((out.traceback || []).join("\n")).slice(-2000),
              });
            }
            const data = out.data || {};
            const plain = Array.isArray(data["text/plain"])
              ? data["text/plain"].join("")
              : data["text/plain"] || "";
            const hasImage = Object.keys(data).some((m) => m.startsWith("image/"));
            if (!hasImage && /^<Figure size [\d.]+x[\d.]+ with \d+ Axes>$/.test(plain.trim())) {
              info.figuresAsText.push(plain.trim());
            }
            if (data[WIDGET_VIEW] && data[WIDGET_VIEW].model_id) {
              info.widgetViews += 1;
              const item = items.length === outputs.length ? items[k] : null;
              const node = item ? item.node.querySelector(".jp-OutputArea-output") : null;
              const rendered =
                node && node.querySelector(".jupyter-widgets:not(.jp-OutputArea-output)") !== null;
              if (rendered) info.widgetViewsRendered += 1;
              else if (item)
                info.widgetFailures.push(
                  `widget view ${data[WIDGET_VIEW].model_id} did not render: ` +
                    JSON.stringify((node ? node.textContent : "").slice(0, 200)),
                );
            }
          });
        }
        const node = cell.node;
        for (const el of node.querySelectorAll(".jupyter-widgets-error-widget")) {
          info.widgetFailures.push("ipywidgets error widget: " + el.textContent.trim().slice(0, 300));
        }
        for (const el of node.querySelectorAll(".jp-OutputArea-output")) {
          const text = (el.textContent || "").trim();
          for (const needle of WIDGET_FAILURE_TEXT) {
            if (text.startsWith(needle) || (el.childElementCount === 0 && text.includes(needle))) {
              info.widgetFailures.push(text.slice(0, 300));
              break;
            }
          }
        }
        for (const el of node.querySelectorAll(".jupyter-widgets")) {
          const t = (el.childElementCount === 0 ? el.textContent : "") || "";
          if (WIDGET_FAILURE_TEXT.some((n) => t.includes(n))) {
            const msg = t.trim().slice(0, 300);
            if (!info.widgetFailures.includes(msg)) info.widgetFailures.push(msg);
          }
        }
        for (const img of node.querySelectorAll(".jp-OutputArea-output img")) {
          info.images.push({
            complete: img.complete,
            naturalWidth: img.naturalWidth,
            naturalHeight: img.naturalHeight,
            png: (img.getAttribute("src") || "").startsWith("data:image/png"),
            inWidget: img.closest(".jupyter-widgets") !== null,
          });
        }
        cells.push(info);
      });
      return cells;
    },

    // The rendered controls, in document order, with the cell each one lives in.
    controls(path) {
      const p = mustPanel(path);
      const result = [];
      p.content.widgets.forEach((cell, index) => {
        if (cell.model.type !== "code") return;
        for (const el of cell.node.querySelectorAll(CONTROL_SELECTOR)) {
          // A Button nested in ToggleButtons etc. is counted once, by its outermost control.
          if (el.parentElement && el.parentElement.closest(CONTROL_SELECTOR)) continue;
          const kind = (CONTROL_KINDS.find((k) => el.matches(k)) || ".widget").slice(1);
          result.push({
            cell: index,
            kind,
            visible: visible(el),
            hidden: deliberatelyHidden(el),
            disabled:
              el.matches(".mod-disabled, [disabled]") ||
              el.querySelector("[disabled], .mod-disabled, .noUi-target[disabled]") !== null,
            text: (el.textContent || "").trim().slice(0, 80),
          });
        }
      });
      return result;
    },

    // What a learner sees change when a control works: plots (hashed image data), the text of
    // Output/HTML widgets and of ordinary outputs, excluding the controls themselves (a
    // slider's read-out changes whenever it moves).
    snapshot(path) {
      const p = mustPanel(path);
      const parts = [];
      for (const img of p.content.node.querySelectorAll(".jp-OutputArea-output img")) {
        parts.push("img " + hash(img.getAttribute("src") || ""));
      }
      for (const svg of p.content.node.querySelectorAll(".jp-OutputArea-output svg")) {
        if (!svg.closest(CONTROL_SELECTOR)) parts.push("svg " + hash(svg.outerHTML));
      }
      const textSel = ".widget-output, .widget-html, .widget-htmlmath, .widget-label";
      for (const el of p.content.node.querySelectorAll(textSel)) {
        if (el.closest(CONTROL_SELECTOR)) continue;
        parts.push("widget " + hash(el.innerText || ""));
      }
      for (const el of p.content.node.querySelectorAll(
        ".jp-OutputArea-output .jp-RenderedText, .jp-OutputArea-output .jp-RenderedHTMLCommon",
      )) {
        if (el.closest(".jupyter-widgets")) continue;
        parts.push("out " + hash(el.innerText || ""));
      }
      return parts.join("|");
    },

    // After a control moved: true once the outputs changed, or once nothing happened for a
    // while (kernel idle, DOM quiet) after at least `minMs` (a callback that changes nothing).
    changedOrDone(path, before, since, minMs, quietMs) {
      if (api.snapshot(path) !== before) return true;
      return performance.now() - since > minMs && api.quietFor(path, quietMs);
    },

    now() {
      return performance.now();
    },

    // Mark the n-th control (document order, as in controls()) so Playwright can locate it.
    markControl(path, n) {
      const p = mustPanel(path);
      for (const el of document.querySelectorAll("[data-minijit-target]")) {
        el.removeAttribute("data-minijit-target");
      }
      const all = [];
      p.content.widgets.forEach((cell) => {
        if (cell.model.type !== "code") return;
        for (const el of cell.node.querySelectorAll(CONTROL_SELECTOR)) {
          if (el.parentElement && el.parentElement.closest(CONTROL_SELECTOR)) continue;
          all.push(el);
        }
      });
      const el = all[n];
      if (!el) return false;
      let target = el;
      if (el.classList.contains("widget-slider")) {
        target = el.querySelector(".noUi-handle") || el.querySelector("input[type=range]") || el;
      } else if (el.classList.contains("widget-dropdown")) {
        target = el.querySelector("select") || el;
      } else if (!el.matches("button")) {
        target = el.querySelector("button") || el;
      }
      target.setAttribute("data-minijit-target", "1");
      target.scrollIntoView({ block: "center" });
      return true;
    },

    // The notebook's scroller, scrolled to the top: how tall its content is and how much of it
    // shows, so that a screenshot can grow the viewport to show the whole chapter.
    scrollerSize(path) {
      const p = mustPanel(path);
      const scroller = p.content.node.querySelector(".jp-WindowedPanel-outer") || p.content.node;
      scroller.scrollTop = 0;
      return { scrollHeight: scroller.scrollHeight, clientHeight: scroller.clientHeight };
    },
  };

  window.__minijit = api;
})();
