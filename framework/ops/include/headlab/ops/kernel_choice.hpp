// headlab/ops/kernel_choice.hpp: which of an op's two implementations runs.
//
// softmax, log_softmax, cross_entropy, layer_norm, matmul and linear each have
//   - a readable reference, in the op's own file (ops/softmax.cpp, ...): the formula written as
//     plain loops or simple xtensor, what a student writes; for the course tasks (0.5, 0.6, 0.7,
//     3.1, 4.1) the reference IS the task's region;
//   - a fast kernel, in ops/kernels/ (SIMD row loops, batched gemm, subnormal flushing), the same
//     numbers to rounding (tests/ops/test_kernels_match_reference.cpp holds the two equal).
// ops/kernels/README.md explains the split and why this switch looks the way it does.
//
//   KernelChoice::fast       the fast kernels everywhere: the default, for training speed.
//   KernelChoice::course     the course tasks' regions, and the fast kernels for everything else:
//                            what the course's task tests run (tests/course/), so that a student's
//                            answer is what they test. The student copy's default.
//   KernelChoice::reference  the readable references everywhere (slow: for tests and reading).
//
// The environment variable HEADLAB_KERNELS=fast|course|reference sets the choice a program starts
// with; set_kernel_choice and KernelChoiceScope change it while it runs. Whatever the choice, a task
// that HEADLAB_BLANK_TASKS blanks runs its (blanked) region, and in the student copy every task's
// region runs: there the student's answer is the only implementation of it.
#pragma once

#include <string>

namespace headlab {

enum class KernelChoice { fast, course, reference };

// The current choice (process-wide; the first call reads HEADLAB_KERNELS, ValueError if it is not
// one of fast, course, reference).
KernelChoice kernel_choice();
void set_kernel_choice(KernelChoice choice);
const char* kernel_choice_name(KernelChoice choice);       // "fast", "course", "reference"
KernelChoice parse_kernel_choice(const std::string& name);  // the inverse; ValueError otherwise

// Sets a choice for its lifetime, then puts the previous one back.
class KernelChoiceScope {
 public:
  explicit KernelChoiceScope(KernelChoice choice) : previous_(kernel_choice()) { set_kernel_choice(choice); }
  ~KernelChoiceScope() { set_kernel_choice(previous_); }
  KernelChoiceScope(const KernelChoiceScope&) = delete;
  KernelChoiceScope& operator=(const KernelChoiceScope&) = delete;

 private:
  KernelChoice previous_;
};

namespace detail {
// For the part of an op that is course task `task` (its region, e.g. "0.6"): true when the region
// should run instead of the fast kernel (choice course or reference, the task blanked, or the
// student copy).
bool run_task_region(const char* task);
// For the parts that are no task (the forwards of softmax, layer_norm, matmul, ...): true when the
// readable reference should run (choice reference).
bool run_reference();
}  // namespace detail

}  // namespace headlab
