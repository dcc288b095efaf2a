"""Interactive views of tile programs (anywidget): one Python class and one JS file per view."""
