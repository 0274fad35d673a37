//! Exported C and Fortran functions (stub).
