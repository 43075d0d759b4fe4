"""Generated protocol stubs (by sdk/python/generate.sh); do not edit."""
