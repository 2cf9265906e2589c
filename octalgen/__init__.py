"""octalgen: Sprague–Grundy values of octal games, from a pure-Python reference to generated C and hardware."""

__version__ = "0.2.0"
