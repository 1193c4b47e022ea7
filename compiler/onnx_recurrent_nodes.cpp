// RNN, GRU and LSTM, unrolled over the sequence at import (its length is static). Per direction,
// one gemm projects every step's input at once (X W^T + Wb + Rb, the two biases summed once); each
// step then adds the previous hidden state times R^T to its slice of that (a gemm with the slice
// as its c) and applies the gates as ONNX's reference computes them:
// - RNN:  H = f(pre)
// - GRU (gates z, r, h):  z, r = f(pre_zr);  h~ = g(x Wh^T + Wbh + (r H) Rh^T + Rbh), with
//   linear_before_reset g(x Wh^T + Wbh + r (H Rh^T + Rbh));  H' = (1 - z) h~ + z H
// - LSTM (gates i, o, f, c):  i = f(pre_i + Pi C), f = f(pre_f + Pf C), c~ = g(pre_c),
//   C' = f C + i c~, o = f(pre_o + Po C'), H' = o h(C')  (without peepholes i, o and f are one
//   activation over their three adjacent columns)
// A missing initial_h or initial_c is zero: the first step leaves out its terms in it (no
// recurrent gemm, no product). Y stacks every step's H (a concat), Y_h and Y_c the last ones.
// Steps are layers "<first named output>[.forward|.reverse].t<time>.<step>", their instructions
// named by the node.
#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

struct Activation {
  std::string fn;  // the activation op's
  double alpha;
};

// The `activations` fracsim has, with ONNX's default alphas (activation_alpha and
// activation_beta are refused).
const std::map<std::string, Activation>& activation_fns() {
  static const std::map<std::string, Activation> kFns = {
      {"Elu", {"elu", 1.0}},         {"LeakyRelu", {"leaky_relu", 0.01}},
      {"Relu", {"relu", 0}},         {"Sigmoid", {"sigmoid", 0}},
      {"Softplus", {"softplus", 0}}, {"Softsign", {"softsign", 0}},
      {"Tanh", {"tanh", 0}},         {"ThresholdedRelu", {"thresholded_relu", 1.0}},
  };
  return kFns;
}

}  // namespace

std::string OnnxImporter::slice_axis(const Node& n, const std::string& input, size_t axis,
                                     int64_t start, int64_t count, const std::string& name,
                                     bool drop) {
  const TensorDesc t = w_.tensor(input);
  Shape out = t.shape;
  out[axis] = count;
  Layer& l = add_layer(n, LayerKind::slice, {input}, t.dtype, out, drop ? name + ".slice" : name);
  l.starts.assign(t.shape.size(), 0);
  l.starts[axis] = start;
  l.steps.assign(t.shape.size(), 1);
  if (!drop) return l.name;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  return add_layer(n, LayerKind::reshape, {name + ".slice"}, t.dtype, out, name).name;
}

void OnnxImporter::import_recurrent(const Node& n, Recurrent kind) {
  std::set<std::string> known = {"activations", "direction", "hidden_size"};
  if (opset_ >= 14) known.insert("layout");
  if (kind == Recurrent::gru) known.insert("linear_before_reset");
  if (kind == Recurrent::lstm) known.insert("input_forget");
  NodeAttrs a(*this, n, known);
  const bool lstm = kind == Recurrent::lstm, gru = kind == Recurrent::gru;
  check_outputs(n, lstm ? 3 : 2);
  const int max_inputs = lstm ? 8 : 6;
  if (n.input_size() > max_inputs)
    throw error(n, fmt::format("{} inputs; the op takes at most {}", n.input_size(), max_inputs));
  const std::string base = composite_base(n);
  const bool batchwise = a.get_bool("layout", false);
  const std::string direction = a.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    throw error(n, fmt::format("attribute 'direction' = '{}' is not forward, reverse or "
                               "bidirectional",
                               direction));
  const int64_t D = direction == "bidirectional" ? 2 : 1;
  if (lstm && a.get_bool("input_forget", false))
    throw error(n,
                "attribute 'input_forget' = 1 (input and forget gates coupled) is not supported");
  const bool linear_before_reset = gru && a.get_bool("linear_before_reset", false);

  const TensorDesc x = data(n, 0), w = data(n, 1), r = data(n, 2);
  require_rank(n, x, 3, 3);
  require_rank(n, r, 3, 3);
  const int64_t S = x.shape[batchwise ? 1 : 0], batch = x.shape[batchwise ? 0 : 1];
  const int64_t I = x.shape[2];
  const int64_t H = a.has("hidden_size") ? a.get_int("hidden_size", 0) : r.shape[2];
  if (H < 1) throw error(n, fmt::format("attribute 'hidden_size' = {} must be positive", H));
  const int64_t G = (lstm ? 4 : gru ? 3 : 1) * H;
  auto expect = [&](const TensorDesc& t, const Shape& s, const char* what) {
    if (t.shape != s)
      throw error(n,
                  fmt::format("input '{}' ({}) is {}; for {} direction(s), input size {} and "
                              "hidden size {} it must be {}",
                              t.name, what, isa::shape_str(t.shape), D, I, H, isa::shape_str(s)));
  };
  expect(w, {D, G, I}, "W");
  expect(r, {D, G, H}, "R");
  std::optional<TensorDesc> bias, h0, c0, peephole;
  if (has_input(n, 3)) {
    bias = data(n, 3);
    expect(*bias, {D, 2 * G}, "B");
  }
  if (has_input(n, 4)) {
    // Every batch entry runs the whole sequence: shorter ones would stop early.
    const std::vector<int64_t> lens = constant_ints(n, 4, "sequence_lens");
    if (static_cast<int64_t>(lens.size()) != batch ||
        std::any_of(lens.begin(), lens.end(), [&](int64_t len) { return len != S; }))
      throw error(n, fmt::format("sequence_lens {} is not the sequence length {} for each of "
                                 "the {} batch entries (fracsim unrolls the whole sequence)",
                                 lens, S, batch));
  }
  const Shape state = batchwise ? Shape{batch, D, H} : Shape{D, batch, H};
  const size_t state_axis = batchwise ? 1 : 0;
  if (has_input(n, 5)) {
    h0 = data(n, 5);
    expect(*h0, state, "initial_h");
  }
  if (lstm && has_input(n, 6)) {
    c0 = data(n, 6);
    expect(*c0, state, "initial_c");
  }
  if (lstm && has_input(n, 7)) {
    peephole = data(n, 7);
    expect(*peephole, {D, 3 * H}, "P");
  }

  // The activations per direction: f (RNN), f and g (GRU), f, g and h (LSTM).
  const std::vector<std::string> defaults =
      lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
            : std::vector<std::string>{"Tanh"};
  std::vector<std::string> names;
  if (const onnx::AttributeProto* at = a.find("activations")) {
    if (at->type() != onnx::AttributeProto::STRINGS)
      throw error(n, "attribute 'activations' must be a list of strings");
    names.assign(at->strings().begin(), at->strings().end());
    if (names.size() != defaults.size() * static_cast<size_t>(D))
      throw error(n, fmt::format("attribute 'activations' {} must have {} entries ({} per "
                                 "direction)",
                                 names, defaults.size() * static_cast<size_t>(D), defaults.size()));
  } else {
    for (int64_t d = 0; d < D; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  std::vector<Activation> acts;
  for (const std::string& name : names) {
    auto it = activation_fns().find(name);
    if (it == activation_fns().end()) {
      std::vector<std::string> have;
      for (const auto& kv : activation_fns()) have.push_back(kv.first);
      throw error(n, fmt::format("activation '{}' is not supported (fracsim has {})", name,
                                 fmt::join(have, ", ")));
    }
    acts.push_back(it->second);
  }

  auto activation = [&](const Activation& f, const std::string& in, const std::string& name) {
    Layer& l = add_layer(n, LayerKind::activation, {in}, DType::f32, w_.tensor(in).shape, name);
    l.fn = f.fn;
    l.alpha = f.alpha;
    return l.name;
  };
  auto binary = [&](const std::string& fn, const std::string& lhs, const std::string& rhs,
                    const std::string& name) {
    const Shape s = *broadcast_shapes(w_.tensor(lhs).shape, w_.tensor(rhs).shape);
    Layer& l = add_layer(n, LayerKind::eltwise, {lhs, rhs}, DType::f32, s, name);
    l.fn = fn;
    return l.name;
  };
  // lhs [M, K] times rhs [N, K] transposed, plus c broadcast (when given).
  auto gemm = [&](const std::string& lhs, const std::string& rhs, const std::string& c,
                  const std::string& name) {
    std::vector<std::string> in = {lhs, rhs};
    if (!c.empty()) in.push_back(c);
    const Shape s = {w_.tensor(lhs).shape[0], w_.tensor(rhs).shape[0]};
    Layer& l = add_layer(n, LayerKind::gemm, std::move(in), DType::f32, s, name);
    l.alpha = 1.0;
    l.gemm_beta = 1.0;
    l.trans_b = true;
    return l.name;
  };
  auto cols = [&](const std::string& in, int64_t start, int64_t count, const std::string& name) {
    return slice_axis(n, in, 1, start, count, name);
  };
  std::string one;
  if (gru) one = data_by_name(n, scalar_constant(n, "one", 1, DType::f32)).name;

  const std::string rows =
      add_layer(n, LayerKind::reshape, {x.name}, DType::f32, {S * batch, I}, base + ".x_rows").name;
  // Per direction, the hidden (and cell) state after each time index.
  std::vector<std::vector<std::string>> hs(D, std::vector<std::string>(S));
  std::vector<std::vector<std::string>> cs = hs;
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const std::string p =
        D == 1 ? base : fmt::format("{}.{}", base, reverse ? "reverse" : "forward");
    const Activation& f = acts[d * defaults.size()];
    const Activation& g = acts[d * defaults.size() + (defaults.size() > 1 ? 1 : 0)];
    const Activation& h_act = acts[d * defaults.size() + defaults.size() - 1];
    auto of_direction = [&](const std::string& t, size_t axis, const std::string& what) {
      return slice_axis(n, t, axis, d, 1, p + "." + what, true);
    };
    const std::string wd = of_direction(w.name, 0, "W"), rd = of_direction(r.name, 0, "R");
    std::string input_bias, rbh;
    if (bias) {
      const std::string bd = of_direction(bias->name, 0, "B");
      const std::string wb = slice_axis(n, bd, 0, 0, G, p + ".Wb");
      const std::string rb = slice_axis(n, bd, 0, G, G, p + ".Rb");
      if (!linear_before_reset) {
        input_bias = binary("add", wb, rb, p + ".bias");
      } else {
        // Rbh is added to the recurrent product before the reset gate scales it.
        const std::string zr = binary("add", slice_axis(n, wb, 0, 0, 2 * H, p + ".Wb_zr"),
                                      slice_axis(n, rb, 0, 0, 2 * H, p + ".Rb_zr"), p + ".bias_zr");
        Layer& l = add_layer(n, LayerKind::concat, {zr, slice_axis(n, wb, 0, 2 * H, H, p + ".Wbh")},
                             DType::f32, {G}, p + ".bias");
        l.axis = 0;
        input_bias = l.name;
        rbh = slice_axis(n, rb, 0, 2 * H, H, p + ".Rbh");
      }
    }
    const std::string projected = gemm(rows, wd, input_bias, p + ".projected");
    const size_t time_axis = batchwise ? 1 : 0;
    const std::string steps =
        add_layer(n, LayerKind::reshape, {projected}, DType::f32,
                  batchwise ? Shape{batch, S, G} : Shape{S, batch, G}, p + ".steps")
            .name;
    std::string h = h0 ? of_direction(h0->name, state_axis, "initial_h") : "";
    std::string c = c0 ? of_direction(c0->name, state_axis, "initial_c") : "";
    std::string pi, po, pf;
    if (peephole) {
      const std::string pd = of_direction(peephole->name, 0, "P");
      pi = slice_axis(n, pd, 0, 0, H, p + ".Pi");
      po = slice_axis(n, pd, 0, H, H, p + ".Po");
      pf = slice_axis(n, pd, 0, 2 * H, H, p + ".Pf");
    }
    const std::string r_zr = gru ? slice_axis(n, rd, 0, 0, 2 * H, p + ".R_zr") : "";
    const std::string r_h = gru ? slice_axis(n, rd, 0, 2 * H, H, p + ".Rh") : "";
    for (int64_t k = 0; k < S; ++k) {
      const int64_t t = reverse ? S - 1 - k : k;
      const std::string q = fmt::format("{}.t{}", p, t);
      const std::string in = slice_axis(n, steps, time_axis, t, 1, q + ".input", true);
      if (kind == Recurrent::rnn) {
        const std::string pre = h.empty() ? in : gemm(h, rd, in, q + ".pre");
        h = activation(f, pre, q + ".h");
      } else if (gru) {
        const std::string zr_in = cols(in, 0, 2 * H, q + ".zr_in");
        const std::string zr =
            activation(f, h.empty() ? zr_in : gemm(h, r_zr, zr_in, q + ".zr_pre"), q + ".zr");
        const std::string z = cols(zr, 0, H, q + ".z"), reset = cols(zr, H, H, q + ".r");
        const std::string h_in = cols(in, 2 * H, H, q + ".h_in");
        std::string h_pre = h_in;
        if (!linear_before_reset && !h.empty()) {
          h_pre = gemm(binary("mul", reset, h, q + ".reset"), r_h, h_in, q + ".h_pre");
        } else if (linear_before_reset) {
          const std::string rec = h.empty() ? rbh : gemm(h, r_h, rbh, q + ".h_rec");
          if (!rec.empty())
            h_pre = binary("add", h_in, binary("mul", reset, rec, q + ".reset"), q + ".h_pre");
        }
        const std::string h_new = activation(g, h_pre, q + ".h_new");
        const std::string kept =
            binary("mul", binary("sub", one, z, q + ".update"), h_new, q + ".kept");
        h = h.empty() ? kept : binary("add", kept, binary("mul", z, h, q + ".carried"), q + ".h");
      } else {
        const std::string pre = h.empty() ? in : gemm(h, rd, in, q + ".pre");
        std::string i, o, fg;
        if (!peephole) {
          const std::string ifo = activation(f, cols(pre, 0, 3 * H, q + ".ifo_pre"), q + ".ifo");
          i = cols(ifo, 0, H, q + ".i");
          o = cols(ifo, H, H, q + ".o");
          fg = cols(ifo, 2 * H, H, q + ".f");
        } else {
          auto peeped = [&](int64_t at, const std::string& pg, const std::string& gate) {
            std::string x_g = cols(pre, at, H, q + "." + gate + "_pre");
            if (!c.empty())
              x_g = binary("add", x_g, binary("mul", pg, c, q + "." + gate + "_peep"),
                           q + "." + gate + "_in");
            return activation(f, x_g, q + "." + gate);
          };
          i = peeped(0, pi, "i");
          fg = peeped(2 * H, pf, "f");
        }
        const std::string c_in = activation(g, cols(pre, 3 * H, H, q + ".c_pre"), q + ".c_in");
        const std::string added = binary("mul", i, c_in, q + ".c_added");
        c = c.empty() ? added : binary("add", binary("mul", fg, c, q + ".c_kept"), added, q + ".c");
        if (peephole)
          o = activation(f,
                         binary("add", cols(pre, H, H, q + ".o_pre"),
                                binary("mul", po, c, q + ".o_peep"), q + ".o_in"),
                         q + ".o");
        h = binary("mul", o, activation(h_act, c, q + ".c_act"), q + ".h");
      }
      hs[d][t] = h;
      cs[d][t] = c;
    }
  }

  // Stacks `pieces` [B, H] along the time or direction axis of the output `name` (`whole`), by
  // a concat then a view: along axis 0 of [pieces B, H] (so that each H is written in place in
  // its slice), or with layout 1 along axis 1 of [B, pieces, H] (each H viewed [B, 1, H]).
  auto stack = [&](const std::vector<std::string>& pieces, const Shape& whole,
                   const std::string& name) {
    if (pieces.size() == 1) {
      add_layer(n, LayerKind::reshape, {pieces[0]}, DType::f32, whole, name);
      return;
    }
    const int64_t count = static_cast<int64_t>(pieces.size());
    std::vector<std::string> parts = pieces;
    if (batchwise)
      for (size_t k = 0; k < pieces.size(); ++k)
        parts[k] = add_layer(n, LayerKind::reshape, {pieces[k]}, DType::f32, {batch, 1, H},
                             fmt::format("{}.part{}", name, k))
                       .name;
    Layer& l =
        add_layer(n, LayerKind::concat, parts, DType::f32,
                  batchwise ? Shape{batch, count, H} : Shape{count * batch, H}, name + ".stacked");
    l.axis = batchwise ? 1 : 0;
    add_layer(n, LayerKind::reshape, {name + ".stacked"}, DType::f32, whole, name);
  };
  auto named = [&](int i) { return i < n.output_size() && !n.output(i).empty(); };
  if (named(0)) {
    std::vector<std::string> pieces;
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < D; ++d) pieces.push_back(hs[d][t]);
    stack(pieces, batchwise ? Shape{batch, S, D, H} : Shape{S, D, batch, H}, n.output(0));
  }
  // The last state of each direction: the forward one's at S - 1, the reverse one's at 0.
  auto last = [&](const std::vector<std::vector<std::string>>& states) {
    std::vector<std::string> out;
    for (int64_t d = 0; d < D; ++d)
      out.push_back(states[d][direction == "reverse" || d == 1 ? 0 : S - 1]);
    return out;
  };
  if (named(1)) stack(last(hs), state, n.output(1));
  if (named(2)) stack(last(cs), state, n.output(2));
}

}  // namespace fracsim::compiler
