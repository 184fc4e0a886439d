"""Sphinx configuration of uwjit's manual: Markdown pages (MyST), the C++ API from the public
headers' `///` comments (Doxygen XML through breathe) and the Python API from the module's
docstrings (autodoc). Built by tools/docs.sh, which sets UWJIT_DOXYGEN_XML and puts the built
module on sys.path; warnings are errors there."""

import os

project = "uwjit"
author = "the uwjit authors"
copyright = "the uwjit authors (BSD-3-Clause)"

extensions = ["myst_parser", "breathe", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = []
highlight_language = "text"
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]
html_theme = "alabaster"
# wide enough for the 100-column code of the examples
html_theme_options = {"page_width": "1240px", "sidebar_width": "220px", "code_font_size": "0.75em"}
html_static_path = []

breathe_projects = {"uwjit": os.environ.get("UWJIT_DOXYGEN_XML", "")}
breathe_default_project = "uwjit"
breathe_default_members = ("members",)

autodoc_member_order = "bysource"
autodoc_typehints = "none"
