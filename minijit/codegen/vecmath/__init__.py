"""Branch-free scalar math functions that LLVM can vectorize inside generated loops."""
