// headlab/report/progress.hpp: the progress of a run on the terminal, or in a log.
//
//   ProgressReporter  a live progress line on the terminal, or plain log lines
//                     when the output is a file or a pipe:
//                       [#####...............] step 120/500  loss 1.234  lr 1.0e-03  12.3k tok/s  ETA 0:42
//
// A run stops at its step cap or at its time budget, whichever comes first; the ETA is the nearer
// of the two: (time per step so far) x (steps left), and (budget - training seconds so far). A run
// with a budget and no step cap (total_steps 0) shows "step 120" and the budget's ETA.
//
// Errors (see errors.hpp): ValueError for bad arguments (total_steps < 1, a
// start_step outside [0, total_steps), ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>

namespace headlab {

// Bar: one line redrawn in place with '\r' (for a terminal).
// Lines: a new plain line every few steps (for a log file or a pipe).
// Auto: Bar when the stream is std::cerr / std::clog / std::cout and that
//       file descriptor is a terminal (isatty); Lines for any other stream.
enum class ProgressMode { Auto, Bar, Lines };

struct ProgressOptions {
  ProgressMode mode = ProgressMode::Auto;
  // Lines mode: print every `every` steps and at the last step.
  // 0 = about 20 lines for the whole run: every = ceil(total_steps / 20) (none by steps when the
  // total is unknown: then max_line_seconds alone paces the lines).
  std::int64_t every = 0;
  // Lines mode: a line at least this often (seconds of the clock; 0 = only by steps), so that a
  // long run's log never stays silent.
  double max_line_seconds = 10;
  // The run's time budget in seconds of training (0 = none): with update()'s train_seconds it
  // gives the ETA when the budget comes before the step cap, and the bar's fill.
  double time_budget = 0;
  // Bar mode: redraw at most once per this many seconds (the last step is always drawn).
  double min_redraw_seconds = 0.1;
  int bar_width = 20;  // characters between the brackets
  // Steps already done before this run started (a resumed run): the ETA is
  // computed from the steps this run has done, step - start_step.
  std::int64_t start_step = 0;
  // The clock, in seconds from any fixed origin. Empty = std::chrono::steady_clock.
  // Tests pass a fake clock so that the output is deterministic.
  std::function<double()> clock;
};

class ProgressReporter {
 public:
  // `total_steps` >= 1, or 0 for a run that only its time budget stops (which then must be > 0);
  // else ValueError. The clock is read here: the ETA counts the time since construction.
  explicit ProgressReporter(std::int64_t total_steps, std::ostream& out = std::cerr,
                            ProgressMode mode = ProgressMode::Auto);
  ProgressReporter(std::int64_t total_steps, std::ostream& out, ProgressOptions options);
  ~ProgressReporter();  // calls finish()
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Report that `step` steps are done (1 .. total_steps). `lr` is printed as
  // 1.0e-03; a negative `tokens_per_second` means "not measured" and is left
  // out of the line. NaN losses print as "nan". `train_seconds` (negative: not known) is the
  // training time so far, which the time budget counts.
  void update(std::int64_t step, double loss, double lr, double tokens_per_second = -1, double train_seconds = -1);

  // Shows the last update now if it is not shown yet (Lines mode: its line; Bar mode: a redraw),
  // so that a line comes before an evaluation's output.
  void show();

  // Ends the output: in Bar mode draws the last state if a redraw was
  // throttled away and ends the line with '\n'; in Lines mode prints the last
  // reported step if it has not been printed. Safe to call more than once.
  void finish();

  bool bar() const { return bar_; }             // the mode chosen (Auto resolved)
  std::int64_t every() const { return every_; }  // the Lines interval in use

  // The pieces of the line, exposed for tests and for other reports.
  static std::string format_duration(double seconds);  // 42 -> "0:42", 3725 -> "1:02:05", NaN -> "?"
  static std::string format_rate(double per_second);   // 950 -> "950", 12345 -> "12.3k", 2.5e6 -> "2.5M"

 private:
  std::string status_text(std::int64_t step, double loss, double lr, double tokens_per_second,
                          double train_seconds, double now) const;
  void draw_bar(const std::string& text);

  std::int64_t total_;
  std::ostream& out_;
  ProgressOptions options_;
  bool bar_ = false;
  std::int64_t every_ = 1;
  double start_time_ = 0;

  // The last update, kept so that finish() can show it.
  std::int64_t last_step_ = -1;
  double last_loss_ = 0, last_lr_ = 0, last_rate_ = -1, last_train_seconds_ = -1, last_time_ = 0;
  double last_line_time_ = 0;  // Lines mode: when the last line was printed
  bool last_shown_ = true;  // the last update is on screen / in the log
  double last_draw_time_ = 0;
  bool drawn_ = false;          // Bar mode: a bar line is open on the stream
  std::size_t last_width_ = 0;  // Bar mode: length of the line on screen (to blank leftovers)
  bool finished_ = false;
};

}  // namespace headlab
