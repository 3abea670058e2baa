"""The `hwsim` command line."""
