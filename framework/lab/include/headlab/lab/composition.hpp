// headlab/lab/composition.hpp: how the heads of one layer feed those of a later layer, read from
// the weights alone (Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits").
//
// Row-vector convention, x (1, D) a position of the residual stream; head h of a layer:
//   W_OV^h = W_V^h W_O^h     (D, D)  what the head writes, given what it reads at a key
//   W_QK^h = W_Q^h W_K^hT    (D, D)  its score of query x_i and key x_j: x_i W_QK^h x_j^T
// (W_V^h (D, d): head h's columns of in_proj_weight^T; W_O^h (d, D): its rows of out_proj.weight^T.)
// Head a of layer l writes into the stream that head b of layer l' > l reads:
//   Q-composition(a, b) = ||W_OV^a W_QK^b||_F   / (||W_OV^a||_F ||W_QK^b||_F)   a's output as b's query
//   K-composition(a, b) = ||W_OV^a W_QK^bT||_F  / (||W_OV^a||_F ||W_QK^b||_F)   a's output as b's key
//   V-composition(a, b) = ||W_OV^a W_OV^b||_F   / (||W_OV^a||_F ||W_OV^b||_F)   a's output as b's value
// Each lies in [0, 1]. What the scores leave out, as TransformerLens does: biases, the MLPs, and
// RoPE (the score rotates with the distance i - j; the unrotated W_QK is scored). LayerNorm is
// taken as its linear part at a fixed scale: a pre-LN layer l' reads P diag(gamma) x (P = I - 11^T/D
// removes the mean), so its W_Q, W_K, W_V are left-multiplied by P diag(gamma); in a post-LN model
// head a's write passes layer l's norms (norm1, and norm2 unless attention-only), so W_OV^a is
// right-multiplied by P diag(gamma) for each; the scale 1/sigma cancels in the ratios.
//
// The baseline: the same scores for matrices of the same shapes with independent N(0, 1) entries
// (mean over 100 draws, seed fixed): what "no composition" looks like at these sizes. A pair
// composes when its score stands well above it.
#pragma once

#include <string>
#include <vector>

#include "headlab/train/checkpoint.hpp"

namespace headlab {

struct CompositionScore {
  std::size_t writer_layer = 0, writer_head = 0, reader_layer = 0, reader_head = 0;
  double q = 0, k = 0, v = 0;
};

struct CompositionBaseline {
  double q = 0, k = 0, v = 0;
};

// Frobenius-norm ratio ||A B||_F / (||A||_F ||B||_F) of A (n, m) and B (m, p); 0 when A or B is 0.
double composition_score(const Array<double>& a, const Array<double>& b);

// Every head of every layer against every head of every later layer of a decoder-only model
// (induction, lm), in writer-then-reader order. ValueError naming the command for an
// encoder-decoder or a latent-attention (MLA) model.
std::vector<CompositionScore> composition_scores(LoadedModel& model);

// The baseline for this model's sizes (D, head size d): independent Gaussian W_Q, W_K, W_V (D, d),
// W_O (d, D); the mean over `draws` pairs of heads.
CompositionBaseline random_composition_baseline(std::size_t d_model, std::size_t head_dim, std::size_t draws = 100,
                                                std::uint64_t seed = 1);

}  // namespace headlab
