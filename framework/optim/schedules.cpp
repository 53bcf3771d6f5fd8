// schedules.cpp: the learning-rate schedules of headlab/optim/schedules.hpp (formulas there).
#include "headlab/optim/schedules.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/core/task_marker.hpp"
#include "optim_checks.hpp"

namespace headlab {

namespace {
using detail::check_finite_nonnegative;
using detail::fmt;

void check_step(const char* who, std::size_t step) {
  if (step == 0) throw ValueError(std::string(who) + ".lr: steps count from 1, got step 0");
}
}  // namespace

ConstantSchedule::ConstantSchedule(double lr) : lr_(lr) { check_finite_nonnegative("ConstantSchedule", "lr", lr); }

double ConstantSchedule::lr(std::size_t step) const {
  check_step("ConstantSchedule", step);
  return lr_;
}

NoamSchedule::NoamSchedule(std::size_t d_model, std::size_t warmup, double factor)
    : d_model_(d_model), warmup_(warmup), factor_(factor) {
  if (d_model == 0) throw ValueError("NoamSchedule: d_model must be > 0, got 0");
  if (warmup == 0) throw ValueError("NoamSchedule: warmup must be > 0, got 0 (the formula divides by warmup^1.5)");
  if (!std::isfinite(factor) || factor <= 0) {
    throw ValueError("NoamSchedule: factor must be finite and > 0, got " + fmt(factor));
  }
}

double NoamSchedule::lr(std::size_t step) const {
  check_step("NoamSchedule", step);
  // BEGIN TASK 4.3: Noam schedule
  HEADLAB_TASK("4.3");
  const double s = static_cast<double>(step);
  const double rising = s * std::pow(static_cast<double>(warmup_), -1.5);  // step * warmup^-1.5
  const double falling = std::pow(s, -0.5);                                // step^-0.5
  return factor_ * std::pow(static_cast<double>(d_model_), -0.5) * std::min(falling, rising);
  // END TASK 4.3
}

WarmupDecay::WarmupDecay(const char* name, double base_lr, std::size_t warmup, std::size_t total, double min_lr)
    : name_(name), base_lr_(base_lr), warmup_(warmup), total_(total), min_lr_(min_lr) {
  check_finite_nonnegative(name, "base_lr", base_lr);
  check_finite_nonnegative(name, "min_lr", min_lr);
  if (min_lr > base_lr) {
    throw ValueError(std::string(name) + ": min_lr (" + fmt(min_lr) + ") must not exceed base_lr (" + fmt(base_lr) + ")");
  }
  if (total <= warmup) {
    throw ValueError(std::string(name) + ": total (" + std::to_string(total) + ") must be greater than warmup (" +
                     std::to_string(warmup) + ")");
  }
}

double WarmupDecay::lr(std::size_t step) const {
  check_step(name_, step);
  if (step <= warmup_) return base_lr_ * static_cast<double>(step) / static_cast<double>(warmup_);
  if (step >= total_) return min_lr_;
  const double progress = static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_);
  return min_lr_ + (base_lr_ - min_lr_) * shape(progress);
}

double WarmupCosine::shape(double progress) const {
  const double pi = std::acos(-1.0);
  return 0.5 * (1 + std::cos(pi * progress));
}

double WarmupLinear::shape(double progress) const { return 1 - progress; }

WarmupConstant::WarmupConstant(double base_lr, std::size_t warmup) : base_lr_(base_lr), warmup_(warmup) {
  check_finite_nonnegative("WarmupConstant", "base_lr", base_lr);
}

double WarmupConstant::lr(std::size_t step) const {
  check_step("WarmupConstant", step);
  if (step < warmup_) return base_lr_ * static_cast<double>(step) / static_cast<double>(warmup_);
  return base_lr_;
}

}  // namespace headlab
