// headlab/headlab.hpp: the whole public library in one include, rung by rung.
#pragma once

// core: tensors, autograd, errors, random numbers, gradcheck, graphs, anomaly detection, runtime settings
#include "headlab/core/anomaly.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/core/gradcheck.hpp"
#include "headlab/core/graphviz.hpp"
#include "headlab/core/random.hpp"
#include "headlab/core/runtime.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/core/tensor.hpp"
// ops: every differentiable op, and the switch between their fast kernels and readable references
#include "headlab/ops/kernel_choice.hpp"
#include "headlab/ops/ops.hpp"
// nn: modules and layers; attention: SDPA, multi-head attention and its variants, KV cache
#include "headlab/nn/layers.hpp"
#include "headlab/nn/module.hpp"
#include "headlab/attention/attention.hpp"
// models: the encoder-decoder transformer and the decoder-only LM
#include "headlab/models/transformer.hpp"
// optim: SGD, Adam(W), schedules, clipping
#include "headlab/optim/optim.hpp"
// data: text, vocabularies, TSV corpora, batching, BLEU, safetensors
#include "headlab/data/batching.hpp"
#include "headlab/data/bleu.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/data/text.hpp"
// report: progress, metrics, charts and heatmaps
#include "headlab/report/report.hpp"
// train: options, checkpoints, the training loops, decoding, sampling and generation
#include "headlab/train/decoding.hpp"
#include "headlab/train/evaluation.hpp"
#include "headlab/train/generation.hpp"
#include "headlab/train/memory_estimate.hpp"
#include "headlab/train/run_dir.hpp"
#include "headlab/train/sampling.hpp"
#include "headlab/train/token_codec.hpp"
#include "headlab/train/trainer.hpp"
// lab: head scores, importance, pruning, sweeps
#include "headlab/lab/alignment.hpp"
#include "headlab/lab/explorer.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/lab/head_survival.hpp"
#include "headlab/lab/recall_keys.hpp"
#include "headlab/lab/study.hpp"
#include "headlab/lab/sweep.hpp"
