"""The web settings page: server-rendered chrome (Jinja2, Babel: English and Simplified Chinese) and
small ES modules of its own that read and write through the REST API.

Modules: :mod:`~patchbay.interfaces.web.pages` (routes, static files, :func:`install_pages`),
:mod:`~patchbay.interfaces.web.i18n` (locales, catalogues), :mod:`~patchbay.interfaces.web.security`
(CSP and the other page headers). Design: docs/web.md.
"""
