// headlab/core/errors.hpp: the exception types the library throws.
//
// Every public function that takes shapes, axes or indices checks them and
// throws one of these with a message that names the op and the shapes:
//   ShapeError        incompatible or invalid shapes / axes ("matmul: ...")
//   IndexError        an index (token id, gather index) outside its range
//   ValueError        a bad argument that is not a shape (p outside [0,1), ...)
//   AutogradError     misuse of backward (no grad, graph already freed, ...)
//   GradientShapeError a backward produced a gradient of the wrong shape (a bug)
//   IOError           a file cannot be opened, read, written or renamed
//                     ("save_safetensors: 'ckpt.safetensors': ...")
//   FormatError       (an IOError) a file was read but its contents are invalid
//   NumericalError    a NaN or infinity where there must be none (non-finite loss,
//                     anomaly detection naming the op that made it)
//   OutOfMemory       a tensor buffer could not be allocated ("out of memory: a tensor buffer of
//                     1073741824 floats (4.0 GiB) ..."), or a memory estimate exceeds the limit
//                     (headlab/train/memory_estimate.hpp); never a bare std::bad_alloc
//   NotImplemented    a course task not filled in yet ("TASK 2.1 (...) is not implemented
//                     yet: fill in the region marked TASK 2.1 in framework/attention/sdpa.cpp";
//                     see headlab/course/course.hpp and docs/course.md)
// All derive from headlab::Error, itself a std::runtime_error.
#pragma once

#include <stdexcept>
#include <string>

namespace headlab {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ShapeError : Error {
  using Error::Error;
};
struct IndexError : Error {
  using Error::Error;
};
struct ValueError : Error {
  using Error::Error;
};
struct AutogradError : Error {
  using Error::Error;
};
struct GradientShapeError : AutogradError {
  using AutogradError::AutogradError;
};
struct IOError : Error {
  using Error::Error;
};
struct FormatError : IOError {
  using IOError::IOError;
};
// A NaN or an infinity where there must be none: a non-finite training loss, or an
// op caught by anomaly detection (headlab/core/anomaly.hpp).
struct NumericalError : Error {
  using Error::Error;
};
// Memory that is not there: an allocation that failed, or an estimate above the limit.
struct OutOfMemory : Error {
  using Error::Error;
};
struct NotImplemented : Error {
  using Error::Error;
};

}  // namespace headlab
