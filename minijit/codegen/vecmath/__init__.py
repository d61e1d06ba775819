"""Vectorizable math functions for generated Numba code (docstring completed below)."""

from __future__ import annotations

from minijit.codegen.vecmath.exp_log import (
    exp_f32,
    exp_f64,
    expm1_f32,
    expm1_f64,
    log1p_f32,
    log1p_f64,
    log_f32,
    log_f64,
)
from minijit.codegen.vecmath.hyperbolic import logistic_f32, logistic_f64, tanh_f32, tanh_f64

FUNCTIONS = {
    ("exp", "float64"): exp_f64,
    ("exp", "float32"): exp_f32,
    ("expm1", "float64"): expm1_f64,
    ("expm1", "float32"): expm1_f32,
    ("log", "float64"): log_f64,
    ("log", "float32"): log_f32,
    ("log1p", "float64"): log1p_f64,
    ("log1p", "float32"): log1p_f32,
    ("tanh", "float64"): tanh_f64,
    ("tanh", "float32"): tanh_f32,
    ("logistic", "float64"): logistic_f64,
    ("logistic", "float32"): logistic_f32,
}
