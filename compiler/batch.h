// A workload at another batch (CompileOptions::batch): which tensors carry the batch, and the
// layers that keep it from following.
//
// Rules a user may rely on:
// - a tensor carries the batch when the batch is the outermost factor of its dim 0: sample s
//   owns the s-th of equal slices along dim 0 (the written batch B0 of the inputs, N at batch N);
// - the inputs that carry it: every input of a YAML workload; of an ONNX model every graph input
//   without data but the weights, that is the inputs a node takes as a weight (Conv's W and B,
//   the parameters of BatchNormalization and LayerNormalization, Gemm's B and C, a MatMul's B of
//   rank 2 or less, an element-wise operand of lower rank than the result, as a broadcast bias),
//   directly or through Reshape, Flatten and Transpose. They must agree on the written batch;
// - a layer's outputs carry it when one of its inputs does (but BatchNormalization's running
//   statistics). A layer where the batch cannot follow is refused, with the reason: a rank-0
//   tensor; a reshape whose shape fixes dim 0; a softmax, layernorm, reduce or topk over dim 0;
//   a transpose moving dim 0, a flatten at axis 0, a concat along dim 0; an operand without the
//   batch whose dim 0 meets it (a concat, an element-wise operand of full rank with dim 0 not 1, a
//   matmul's leading batch dim); a matmul or gemm contracting the batch or taking the product's
//   dim 0 from an operand without it; a weight that carries it; an output whose dim 0 is not a
//   multiple of the written batch (its rows would mix samples).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "compiler/workload.h"

namespace fracsim::compiler {

// Reasons are "--batch N: why".
class BatchTracker {
 public:
  explicit BatchTracker(int64_t batch) : batch_(batch) {}

  // Records that `input` carries the batch; returns why it cannot (rank 0, or a written batch
  // unlike the other inputs').
  std::optional<std::string> add_input(const TensorDesc& input);
  // Records which outputs of `l` carry the batch; returns why the batch cannot follow through
  // `l`. `w` holds the tensors `l` reads.
  std::optional<std::string> add_layer(const Workload& w, const Layer& l);

  bool carries(const std::string& tensor) const { return carriers_.count(tensor) > 0; }
  int64_t batch() const { return batch_; }
  // The leading extent of the inputs as written (0 before the first input).
  int64_t written_batch() const { return written_batch_; }

 private:
  std::optional<std::string> reason(const Workload& w, const Layer& l) const;
  std::optional<std::string> refuse(const std::string& why) const;

  int64_t batch_;  // the batch asked for, for messages
  std::set<std::string> carriers_;
  std::string first_input_;  // the input that set written_batch_, for messages
  int64_t written_batch_ = 0;
};

// The inputs of an ONNX workload without data that nodes take as weights (see above).
std::set<std::string> weight_inputs(const Workload& w);

// Checks that `batched`, the workload read again with the carriers' dim 0 set to `batch`, has the
// shapes of `written` with every carrier's dim 0 scaled from the written batch to `batch`; a
// ConfigError naming the file and the layer otherwise.
void check_batched_shapes(const Workload& written, const Workload& batched,
                          const BatchTracker& tracker, int64_t batch);

}  // namespace fracsim::compiler
