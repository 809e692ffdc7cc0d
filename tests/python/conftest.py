"""The binding's tests find the package through PYTHONPATH (python/) and the
library through KGEN_LIBRARY (meson test sets both)."""
