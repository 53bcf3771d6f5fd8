// kernel_choice.cpp: the switch between the fast kernels and the readable references
// (headlab/ops/kernel_choice.hpp, ops/kernels/README.md).
#include "headlab/ops/kernel_choice.hpp"

#include <atomic>
#include <cstdlib>

#include "headlab/core/errors.hpp"
#include "headlab/core/task_marker.hpp"

// framework/CMakeLists.txt defines HEADLAB_STUDENT_COPY=1 when it builds the student copy
// (course/make_student_copy.py leaves .headlab-student-copy at its root).
#ifndef HEADLAB_STUDENT_COPY
#define HEADLAB_STUDENT_COPY 0
#endif

namespace headlab {
namespace {

constexpr bool kStudentCopy = HEADLAB_STUDENT_COPY != 0;

KernelChoice choice_at_start() {
  const char* env = std::getenv("HEADLAB_KERNELS");
  if (env && *env) return parse_kernel_choice(env);
  return kStudentCopy ? KernelChoice::course : KernelChoice::fast;
}

std::atomic<KernelChoice>& current() {
  static std::atomic<KernelChoice> choice{choice_at_start()};
  return choice;
}

}  // namespace

KernelChoice kernel_choice() { return current().load(std::memory_order_relaxed); }

void set_kernel_choice(KernelChoice choice) { current().store(choice, std::memory_order_relaxed); }

const char* kernel_choice_name(KernelChoice choice) {
  switch (choice) {
    case KernelChoice::fast: return "fast";
    case KernelChoice::course: return "course";
    case KernelChoice::reference: return "reference";
  }
  return "?";
}

KernelChoice parse_kernel_choice(const std::string& name) {
  for (KernelChoice c : {KernelChoice::fast, KernelChoice::course, KernelChoice::reference}) {
    if (name == kernel_choice_name(c)) return c;
  }
  throw ValueError("HEADLAB_KERNELS: '" + name + "' is not a kernel choice (fast, course or reference)");
}

namespace detail {

bool run_task_region(const char* task) {
  if (kStudentCopy || kernel_choice() != KernelChoice::fast) return true;
  return task_marker::any_task_blanked() && task_marker::task_blanked(task);
}

bool run_reference() { return kernel_choice() == KernelChoice::reference; }

}  // namespace detail
}  // namespace headlab
