"""Browser tests: the course in a real JupyterLab, driven by headless Chromium."""
