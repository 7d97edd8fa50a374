"""The absl command-line programs; `bin/*` are thin executables calling them."""
