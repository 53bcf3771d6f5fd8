// Golden test: the encoder-decoder Transformer against PyTorch's nn.Transformer
// (tests/fixtures/make_transformer_fixture.py): same weights, same batch with padding,
// same label-smoothed loss; logits, loss, every parameter gradient and the
// losses of 5 Adam steps agree (float64: 1e-9 relative; float32: 1e-4 relative).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>

#include "headlab/headlab.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/optim/optim.hpp"

namespace test_transformer_golden {

using namespace headlab;

namespace {

const std::string kDir = std::string(HEADLAB_FIXTURE_DIR) + "/transformer/";

nlohmann::json read_meta() {
  std::ifstream in(kDir + "meta.json");
  REQUIRE_MESSAGE(in.good(), "missing fixture " << kDir << "meta.json; run /usr/bin/python3 tests/fixtures/make_transformer_fixture.py");
  return nlohmann::json::parse(in);
}

TransformerConfig config_from(const nlohmann::json& m) {
  TransformerConfig c;
  c.d_model = m["d_model"];
  c.ff_dim = m["ff"];
  c.encoder_layers = c.decoder_layers = m["layers"];
  c.dropout = 0.0;
  c.attention.num_heads = m["heads"];
  c.src_vocab = m["V_src"];
  c.tgt_vocab = m["V_tgt"];
  return c;
}

template <typename T>
double max_rel_err(const Array<T>& got, const Array<double>& want) {
  double worst = 0;
  const double scale = std::max(1e-3, double(xt::amax(xt::abs(want))()));
  for (std::size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(double(got.data()[i]) - want.data()[i]) / scale);
  return worst;
}

template <typename T>
void run_golden(double tolerance) {
  const nlohmann::json meta = read_meta();
  Generator gen(0);
  Transformer<T> model(config_from(meta), gen);
  model.train();  // dropout is 0: train mode must equal eval mode here

  std::set<std::string> ours, theirs;
  for (const auto& [name, p] : model.named_parameters()) ours.insert(name);
  for (const auto& n : meta["parameters"]) theirs.insert(n.get<std::string>());
  REQUIRE_MESSAGE(ours == theirs, "parameter names differ from nn.Transformer's");
  for (auto& named : model.named_parameters()) {  // not structured bindings: the _MESSAGE macros' lambdas take `name`
    const std::string& name = named.first;
    auto& p = named.second;
    const Array<double> value = xt::load_npy<double>(kDir + "param." + name + ".npy");
    REQUIRE_MESSAGE(value.shape() == p.value().shape(), name << ": fixture shape differs");
    p.mutable_value() = xt::cast<T>(value);
  }
  const IndexArray src = xt::load_npy<std::int64_t>(kDir + "src.npy");
  const IndexArray tgt_in = xt::load_npy<std::int64_t>(kDir + "tgt_in.npy");
  IndexArray tgt_out = xt::load_npy<std::int64_t>(kDir + "tgt_out.npy");
  const std::int64_t pad = meta["pad"];
  Masks masks;
  masks.src_key_padding = xt::equal(src, pad);
  masks.tgt_key_padding = xt::equal(tgt_in, pad);

  const Tensor<T> logits = model.forward(src, tgt_in, masks, nullptr);
  const Array<double> want_logits = xt::load_npy<double>(kDir + "logits.npy");
  REQUIRE(logits.value().shape() == want_logits.shape());
  CHECK_MESSAGE(max_rel_err(logits.value(), want_logits) < tolerance, "logits");
  const std::ptrdiff_t V = meta["V_tgt"];
  tgt_out.reshape({tgt_out.size()});
  const Tensor<T> loss = cross_entropy(reshape(logits, {-1, V}), tgt_out, pad, T(double(meta["label_smoothing"])));
  const double want_loss = meta["loss"];
  CHECK(std::abs(double(loss.item()) - want_loss) <= tolerance * std::abs(want_loss));
  loss.backward();
  for (const auto& named : model.named_parameters()) {
    const std::string& name = named.first;
    const auto& p = named.second;
    CAPTURE(name);
    REQUIRE_MESSAGE(p.has_grad(), name << " got no gradient");
    const Array<double> want = xt::load_npy<double>(kDir + "grad." + name + ".npy");
    const double err = max_rel_err(p.grad(), want);
    CHECK_MESSAGE(err < tolerance, name << ": gradient relative error " << err);
  }

  // Five Adam steps from these weights: the losses before each step match torch.optim.Adam.
  AdamOptions opt_options;
  opt_options.lr = meta["adam"]["lr"];
  opt_options.beta1 = meta["adam"]["beta1"];
  opt_options.beta2 = meta["adam"]["beta2"];
  opt_options.eps = meta["adam"]["eps"];
  Adam<T> adam(model.parameters(), opt_options);
  for (std::size_t step = 0; step < 5; ++step) {
    adam.zero_grad();
    const Tensor<T> l = cross_entropy(reshape(model.forward(src, tgt_in, masks, nullptr), {-1, V}), tgt_out, pad,
                                      T(double(meta["label_smoothing"])));
    const double want = meta["adam_losses"][step];
    CHECK_MESSAGE(std::abs(double(l.item()) - want) <= tolerance * std::abs(want),
                  "Adam step " << step << ": loss " << l.item() << ", PyTorch " << want);
    l.backward();
    adam.step();
  }
}

}  // namespace

TEST_CASE("transformer golden: float64 logits, loss and every gradient match nn.Transformer to 1e-9") {
  run_golden<double>(1e-9);
}

TEST_CASE("transformer golden: float32 matches to 1e-4") { run_golden<float>(1e-4); }
}  // namespace test_transformer_golden
