#pragma once
// kforge's pybind11 stand-in (pybind11.h beside this): the STL conversions are kforge_ext.h's.
#include <pybind11/pybind11.h>
