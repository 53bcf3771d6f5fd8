// trainer.cpp: `headlab train`: the task the options name, through the shared loop
// (headlab/train/trainer.hpp, training_loop.hpp), and stop requests.
#include "headlab/train/trainer.hpp"

#include <csignal>
#include <filesystem>

#include "headlab/train/memory_estimate.hpp"

namespace headlab {

namespace {
volatile std::sig_atomic_t g_stop_requested = 0;
}
void request_stop() { g_stop_requested = 1; }
bool stop_requested() { return g_stop_requested != 0; }
void clear_stop_request() { g_stop_requested = 0; }

TrainResult train(const TrainOptions& o, std::ostream& log) {
  o.validate();
  if (o.resume_or_start) {  // decided once, here: every task then sees a plain --resume or --overwrite
    TrainOptions decided = o;
    decided.resume_or_start = false;
    std::error_code ec;
    decided.resume = std::filesystem::exists(std::filesystem::path(o.run_dir) / "checkpoint.safetensors", ec);
    decided.overwrite = !decided.resume;
    return train(decided, log);
  }
  check_training_memory(o);  // OutOfMemory with the estimate, before anything is allocated
  switch (o.task) {
    case Task::copy: return train_copy(o, log);
    case Task::translate: return train_translation(o, log);
    case Task::induction: return train_induction(o, log);
    case Task::lm: return train_lm(o, log);
    case Task::recall: return train_recall(o, log);
  }
  return train_copy(o, log);
}

}  // namespace headlab
