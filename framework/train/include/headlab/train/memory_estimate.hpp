// headlab/train/memory_estimate.hpp: how much memory a run will need, from its options alone.
//
// Checked before any tensor is allocated, so that `--layers 100000` is refused in milliseconds
// with the reason, not after half a minute of allocation with a bare std::bad_alloc.
// All tensors are float32 (4 bytes). With P parameters, B sequences of T tokens per batch,
// D = d_model, F = ff, h heads, V the target vocabulary and L layers:
//
//   parameters              4 P
//   gradients               4 P                              (training only)
//   optimiser state         8 P   Adam's m and v; SGD: 4 P with momentum, else 0   (training only)
//   activations of a batch  4 B T L (kAct_D D + kAct_F F)    kept for backward (training only)
//   attention weights       4 B h Tq Tk x 2 per attention module (softmax, masked scores; 3 with
//                           dropout's mask), + 2 of one module in backward; the tiled kernel
//                           keeps (B, h, T) only
//   logits of a batch       4 B T V x kLogits   (logits, log-softmax, their gradient)
//   checkpoint save/resume  4 P x 2 (1 + k), k floats of optimiser state per parameter (Adam 2):
//                           the file's bytes of the model and the optimiser (1 + k), and on
//                           resume the state copied out of them (1 + k)   (training only)
//   best weights            4 P x 2: translate keeps them and writes best.safetensors
//   evaluation buffers      the held-out batch's forward without a graph: one layer's
//                           activations and attention weights at a time, its logits, KV caches
//   checkpoint file         its bytes, read whole (loading only)
//   runtime                 a fixed 48 MB (code, BLAS buffers, data)
//
// The constants were set from measured peak RSS (bench/memory_estimate.sh; docs/training.md, "Conventions of every command"):
// above the peak, within about 2x of it. The limit is --max-memory, else the machine's available
// memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headlab/train/options.hpp"

namespace headlab {

struct MemoryItem {
  std::string what;  // "Adam moments"
  double bytes = 0;
};

struct MemoryEstimate {
  std::vector<MemoryItem> items;
  double total() const;
  // "about 38.2 GB (Adam moments 12.1 GB, attention weights of one batch 9.0 GB, ...)": the total
  // and the largest items, biggest first.
  std::string describe(std::size_t largest = 3) const;
};

// Training: parameters, gradients, Adam, one batch's activations, evaluation buffers. For
// translate the vocabulary sizes come from the data (0: not known yet, counted as 4, the specials).
MemoryEstimate estimate_training_memory(const TrainOptions& o, std::size_t src_vocab = 0, std::size_t tgt_vocab = 0);
// Using a trained model (eval, decode, translate, heads, prune): parameters (twice: the model and the
// weights copied out of the file), evaluation buffers and the checkpoint's own bytes.
MemoryEstimate estimate_inference_memory(const TrainOptions& o, std::size_t src_vocab, std::size_t tgt_vocab,
                                         double checkpoint_bytes);

// The head probe of `heads` and `explore` (headlab/lab/heads.hpp): `sequences` sequences of `length`
// tokens through the model at once, every attention module keeping its weights (B, h, T, T) and
// output (B, T, D) in its taps: 4 B [sites (h T^2 + 2 T D) + one module's work (4 h T^2) + one
// layer's activations T (kProbe_D D + 2 F) x (2 for encoder-decoder) + the logits 2 T V], sites = the
// attention modules (layers; 3 per layer pair for encoder-decoder). Plus the model itself.
MemoryEstimate estimate_probe_memory(const TrainOptions& o, std::size_t vocab, std::size_t sequences,
                                     std::size_t length);

// "4G", "512M", "64k", "1.5G" (powers of 1024; B or iB after the unit allowed) or a byte count.
// ValueError naming the text otherwise.
double parse_memory_size(const std::string& text);
// "38.2 GB" (powers of 1024, one decimal; "MB" below a GiB).
std::string memory_text(double bytes);
// What this process may still allocate: MemAvailable of /proc/meminfo (else physical memory,
// sysconf), or less when a cgroup it runs in (a container, a SLURM job's --mem) leaves less room:
// min over its memory cgroup and each parent of limit - usage (v2 memory.max - memory.current,
// v1 memory.limit_in_bytes - memory.usage_in_bytes; "max" or no file: no limit there). 0 when
// nothing is known.
double available_memory();
// The same, read from other files (a test's): /proc/meminfo, /proc/self/cgroup, the cgroup mount.
double available_memory_at(const std::string& meminfo_path, const std::string& self_cgroup,
                           const std::string& cgroup_root);

// The limit of a run: o.max_memory when given (OptionError "max_memory: ..." when it does not
// parse), else available_memory().
double memory_limit(const TrainOptions& o);

// Throws OutOfMemory when the estimate exceeds `limit` (no check when limit is 0, unknown):
//   "WHAT needs about 38.2 GB (Adam moments 12.1 GB, ...) but 22.5 GB are available; ADVICE"
void check_memory(const MemoryEstimate& estimate, double limit, const std::string& what, const std::string& advice);
// The check of `headlab train`, from the options alone (before data is read or a tensor allocated).
void check_training_memory(const TrainOptions& o, std::size_t src_vocab = 0, std::size_t tgt_vocab = 0);

}  // namespace headlab
