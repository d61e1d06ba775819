"""Chinese text in the course's plots: a CJK font behind matplotlib's default one.

matplotlib's default font, DejaVu Sans, has no Chinese glyphs: a Chinese title is drawn as
empty boxes. :func:`use_cjk_font` puts the first installed font of :data:`CJK_FAMILIES`
after DejaVu Sans in ``font.family``, and matplotlib (3.6 and later) takes each glyph
DejaVu Sans lacks from it, so Latin text and numbers look as in the English course.
``import minijit.course`` calls it when the course language is Chinese
(:func:`minijit.grading.messages.language`); nothing changes for English.

A font installed after matplotlib built its font list (``~/.cache/matplotlib``) is not in
that list; fontconfig's ``fc-list`` still finds it, and it is added from its file.
"""

from __future__ import annotations

import shutil
import subprocess

# Simplified-Chinese fonts, most common first: Linux (Noto = Source Han), macOS, Windows.
CJK_FAMILIES = ("Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "WenQuanYi Micro Hei",
                "WenQuanYi Zen Hei", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei",
                "SimHei", "Arial Unicode MS")
INSTALL_HINT = ("no Chinese font found, so Chinese plot labels show as boxes; install one "
                "(Debian/Ubuntu: sudo apt-get install fonts-noto-cjk) and restart the kernel")


def cjk_family() -> str | None:
    """The first of :data:`CJK_FAMILIES` matplotlib can use, adding fontconfig's Chinese
    fonts to its list when it has none; ``None`` when the machine has no Chinese font."""
    from matplotlib import font_manager

    def known() -> str | None:
        names = {f.name for f in font_manager.fontManager.ttflist}
        return next((family for family in CJK_FAMILIES if family in names), None)

    family = known()
    if family is None and shutil.which("fc-list"):
        listed = subprocess.run(["fc-list", ":lang=zh", "file"], capture_output=True,
                                text=True, timeout=30).stdout
        for line in listed.splitlines():
            path = line.split(":")[0].strip()
            if path:
                font_manager.fontManager.addfont(path)
        family = known()
    return family


def use_cjk_font() -> str | None:
    """Draw Chinese labels with a CJK font (see the module docstring); returns its family,
    or ``None`` after a warning when there is none."""
    import warnings

    import matplotlib

    family = cjk_family()
    if family is None:
        warnings.warn(INSTALL_HINT, stacklevel=2)
        return None
    families = list(matplotlib.rcParams["font.family"])
    if families == ["sans-serif"]:
        families = list(matplotlib.rcParams["font.sans-serif"][:1])
    if family not in families:
        matplotlib.rcParams["font.family"] = families + [family]
    return family
