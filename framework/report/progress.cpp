// progress.cpp: the progress bar and the progress lines (see headlab/report/progress.hpp).
#include "headlab/report/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "headlab/core/errors.hpp"
#include "text_format.hpp"

namespace headlab {

using text_format::format;

namespace {

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// A generic std::ostream has no file descriptor; the three standard streams do.
bool is_terminal(const std::ostream& out) {
  if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO) == 1;
  if (&out == &std::cout) return ::isatty(STDOUT_FILENO) == 1;
  return false;
}

ProgressOptions with_mode(ProgressMode mode) {
  ProgressOptions options;
  options.mode = mode;
  return options;
}

}  // namespace

ProgressReporter::ProgressReporter(std::int64_t total_steps, std::ostream& out, ProgressMode mode)
    : ProgressReporter(total_steps, out, with_mode(mode)) {}

ProgressReporter::ProgressReporter(std::int64_t total_steps, std::ostream& out, ProgressOptions options)
    : total_(total_steps), out_(out), options_(std::move(options)) {
  if (total_ < 0 || (total_ == 0 && !(options_.time_budget > 0)))
    throw ValueError("ProgressReporter: total_steps must be >= 1, or 0 with a time budget, got " +
                     std::to_string(total_));
  if (!(options_.time_budget >= 0)) throw ValueError("ProgressReporter: time_budget must be >= 0 seconds");
  if (!(options_.max_line_seconds >= 0)) throw ValueError("ProgressReporter: max_line_seconds must be >= 0");
  if (options_.every < 0) throw ValueError("ProgressReporter: every must be >= 0 (0 = about 20 lines)");
  if (!(options_.min_redraw_seconds >= 0)) throw ValueError("ProgressReporter: min_redraw_seconds must be >= 0");
  if (options_.bar_width < 1) throw ValueError("ProgressReporter: bar_width must be >= 1");
  if (options_.start_step < 0 || (total_ > 0 && options_.start_step >= total_))
    throw ValueError("ProgressReporter: start_step must be in [0, total_steps), got " +
                     std::to_string(options_.start_step));
  if (!options_.clock) options_.clock = steady_seconds;

  bar_ = options_.mode == ProgressMode::Bar || (options_.mode == ProgressMode::Auto && is_terminal(out_));
  // About 20 lines for the run: every = ceil(total / 20); with no step cap, none by steps (0).
  every_ = options_.every > 0 ? options_.every : total_ > 0 ? std::max<std::int64_t>(1, (total_ + 19) / 20) : 0;
  start_time_ = options_.clock();
  last_line_time_ = start_time_;
}

ProgressReporter::~ProgressReporter() {
  try {
    finish();
  } catch (...) {
    // A destructor must not throw; a failing stream here has nothing left to tell.
  }
}

std::string ProgressReporter::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  const long long h = s / 3600, m = (s % 3600) / 60, sec = s % 60;
  return h > 0 ? format("%lld:%02lld:%02lld", h, m, sec) : format("%lld:%02lld", m, sec);
}

std::string ProgressReporter::format_rate(double per_second) {
  if (!std::isfinite(per_second) || per_second < 0) return "?";
  if (per_second < 999.5) return format("%.0f", per_second);
  static const char* const units[] = {"k", "M", "G", "T"};
  double v = per_second / 1000;
  int unit = 0;
  while (v >= 999.95 && unit < 3) {  // 999.95k would print as "1000.0k": move up to "1.0M"
    v /= 1000;
    ++unit;
  }
  return format("%.1f%s", v, units[unit]);
}

// "[####......] step 120/500  loss 1.234  lr 1.0e-03  12.3k tok/s  ETA 0:42" (Bar),
// "step 120/500  loss 1.234  lr 1.0e-03  12.3k tok/s  elapsed 0:17  ETA 0:42" (Lines);
// "step 120  ..." when only the time budget stops the run.
std::string ProgressReporter::status_text(std::int64_t step, double loss, double lr, double tokens_per_second,
                                          double train_seconds, double now) const {
  const bool budget = options_.time_budget > 0 && train_seconds >= 0;
  std::string text;
  if (bar_) {
    double fraction = total_ > 0 ? static_cast<double>(step) / static_cast<double>(total_) : 0.0;
    if (budget) fraction = std::max(fraction, train_seconds / options_.time_budget);
    fraction = std::clamp(fraction, 0.0, 1.0);
    const int filled = static_cast<int>(fraction * options_.bar_width);
    text = "[" + std::string(filled, '#') + std::string(options_.bar_width - filled, '.') + "] ";
  }
  text += total_ > 0 ? format("step %lld/%lld", static_cast<long long>(step), static_cast<long long>(total_))
                     : format("step %lld", static_cast<long long>(step));
  text += format("  loss %.4g  lr %.1e", loss, lr);
  if (tokens_per_second >= 0) text += "  " + format_rate(tokens_per_second) + " tok/s";

  // ETA: the time per step so far times the steps left, or the budget left if that comes first.
  const double elapsed = now - start_time_;
  const std::int64_t done = step - options_.start_step;
  double eta = std::numeric_limits<double>::infinity();
  if (total_ > 0) {
    const std::int64_t left = std::max<std::int64_t>(0, total_ - step);
    eta = left == 0 ? 0.0
          : done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(left)
                     : std::numeric_limits<double>::quiet_NaN();
  }
  if (budget) {
    const double budget_left = std::max(0.0, options_.time_budget - train_seconds);
    eta = std::isnan(eta) ? budget_left : std::min(eta, budget_left);
  }
  if (!bar_) text += "  elapsed " + format_duration(elapsed);
  text += "  ETA " + format_duration(eta);
  return text;
}

void ProgressReporter::draw_bar(const std::string& text) {
  // '\r' returns to the start of the line; spaces blank whatever was longer before.
  out_ << '\r' << text;
  if (text.size() < last_width_) out_ << std::string(last_width_ - text.size(), ' ');
  last_width_ = text.size();
  out_.flush();
  drawn_ = true;
}

void ProgressReporter::update(std::int64_t step, double loss, double lr, double tokens_per_second,
                              double train_seconds) {
  if (step < 0) throw ValueError("ProgressReporter::update: step must be >= 0, got " + std::to_string(step));
  finished_ = false;
  const double now = options_.clock();
  const bool same_step = step == last_step_;
  last_step_ = step;
  last_loss_ = loss;
  last_lr_ = lr;
  last_rate_ = tokens_per_second;
  last_train_seconds_ = train_seconds;
  last_time_ = now;

  if (bar_) {
    // The first update, the last step, and otherwise at most one redraw per interval.
    const bool due = !drawn_ || (total_ > 0 && step >= total_) || now - last_draw_time_ >= options_.min_redraw_seconds;
    if (due) {
      draw_bar(status_text(step, loss, lr, tokens_per_second, train_seconds, now));
      last_draw_time_ = now;
    }
    last_shown_ = due;
  } else {
    // Every `every` steps, the last step, and at least every max_line_seconds.
    const bool due = (every_ > 0 && step % every_ == 0) || (total_ > 0 && step >= total_) ||
                     (options_.max_line_seconds > 0 && now - last_line_time_ >= options_.max_line_seconds);
    if (due && !(same_step && last_shown_)) {
      out_ << status_text(step, loss, lr, tokens_per_second, train_seconds, now) << '\n';
      out_.flush();
      last_shown_ = true;
      last_line_time_ = now;
    } else if (!due) {
      last_shown_ = false;
    }
  }
}

void ProgressReporter::show() {
  if (last_step_ < 0 || last_shown_) return;
  const std::string text = status_text(last_step_, last_loss_, last_lr_, last_rate_, last_train_seconds_, last_time_);
  if (bar_) {
    draw_bar(text);
    last_draw_time_ = last_time_;
  } else {
    out_ << text << '\n';
    out_.flush();
    last_line_time_ = last_time_;
  }
  last_shown_ = true;
}

void ProgressReporter::finish() {
  if (finished_) return;
  finished_ = true;
  if (last_step_ < 0) return;  // nothing was reported
  const std::string text = last_shown_ ? std::string() : status_text(last_step_, last_loss_, last_lr_,
                                                                      last_rate_, last_train_seconds_, last_time_);
  if (bar_) {
    if (!last_shown_) draw_bar(text);
    if (drawn_) out_ << '\n';
    drawn_ = false;
    last_width_ = 0;
  } else if (!last_shown_) {
    out_ << text << '\n';  // a run stopped between two printed steps: show where it stopped
  }
  last_shown_ = true;
  out_.flush();
}

}  // namespace headlab
