"""Jinja templates of octalgen, installed as the package ``octalgen.templates``.

Templates only place values that Python has decided (see :mod:`octalgen.render`).
"""
