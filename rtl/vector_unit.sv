// vector_unit: LANES integer lanes for the element-wise ops (eltwise add/sub/mul/max/min,
// activation relu/leaky_relu) and the segmented reductions (reduce sum/max/min), with the
// reference rules of isa/semantics/elementwise.cpp and reduction.cpp bit for bit.
//
// Operand stream (in_*): one beat holds up to LANES consecutive elements. Every lane carries a
// 32-bit two's-complement value (in_a, and in_b for eltwise) already sign-extended from the
// dtype in_dtype (0 = i8, 1 = i16, 2 = i32); lanes with in_lane_valid low are idle (the tail of
// the last beat). in_op (below) selects the op. For leaky_relu, in_alpha is the slope as an
// unsigned Q16 number: alpha = in_alpha / 65536, 0 <= alpha <= 1.
//
// Result stream (out_*): one beat per operand beat, out_data[l] the result of lane l (sign
// extended to 32 bits; an i32 value for the reductions).
//
// Rules. i32 add/sub/mul wrap around; i8/i16 add/sub/mul saturate to the dtype. max/min are
// exact. relu: x > 0 ? x : 0. leaky_relu: x > 0 ? x : round_half_even(x * in_alpha / 2^16),
// saturated: exactly the reference's double rule (x / 2^f * alpha * 2^f, rounded half to even)
// for any frac_bits, because alpha * x is then exact in a double (at most 49 significant bits).
//
// Reductions are segmented: in_seg_first[l] marks lane l as the first term of a new output; the
// running value of lane l is then x_l, else combine(running value of the lane before, x_l), where
// the lane before lane 0 is the last valid lane of the previous beat (a register). out_data[l]
// is lane l's running value: the bridge takes it at the lane holding an output's last term. Sums
// wrap in i32, max/min compare signed: the reference's fold in index order. Packing the terms of
// several outputs into one beat is what makes a reduction of E terms take cdiv(E, LANES) beats.
//
// Timing. The datapath is combinational from operand to result beat (no fill, no drain): a job
// of E elements takes exactly cdiv(E, LANES) cycles with no back-pressure, the `cycles` formula
// of isa/ops/eltwise.yaml, activation.yaml and reduce.yaml; each stalled cycle adds one.
// Back-pressure: out_valid = in_valid and in_ready = out_ready, so a held result holds the
// operand beat, and the carry register only moves on an accepted beat.
//
// Reset (synchronous, active high) clears the reduction carry.
//
// FRACSIM_VECTOR_BUG (a define, used only by the checker's own test) builds a wrong unit whose
// i8 saturation stops one short of the minimum (-127 instead of -128).
module vector_unit #(
    parameter int LANES = 8
) (
    input  logic              clk,
    input  logic              rst,
    // operands
    input  logic              in_valid,
    output logic              in_ready,
    input  logic [3:0]        in_op,
    input  logic [1:0]        in_dtype,
    input  logic [16:0]       in_alpha,
    input  logic [LANES-1:0]  in_lane_valid,
    input  logic [LANES-1:0]  in_seg_first,
    input  logic [31:0]       in_a[LANES],
    input  logic [31:0]       in_b[LANES],
    // results
    output logic              out_valid,
    input  logic              out_ready,
    output logic [31:0]       out_data[LANES]
);
  // in_op
  localparam logic [3:0] OP_ADD = 4'd0, OP_SUB = 4'd1, OP_MUL = 4'd2, OP_MAX = 4'd3,
                         OP_MIN = 4'd4, OP_RELU = 4'd5, OP_LEAKY = 4'd6, OP_RSUM = 4'd7,
                         OP_RMAX = 4'd8, OP_RMIN = 4'd9;
  // in_dtype
  localparam logic [1:0] DT_I8 = 2'd0, DT_I16 = 2'd1;

  assign in_ready = out_ready;
  assign out_valid = in_valid;

  // Clamps a 64-bit value to the dtype's range (i32: keeps the low 32 bits, wrapping).
  function automatic logic [31:0] fit(input logic signed [63:0] v, input logic [1:0] dt);
    logic signed [63:0] lo, hi;
    begin
      case (dt)
`ifdef FRACSIM_VECTOR_BUG
        DT_I8:   begin lo = -64'sd127; hi = 64'sd127; end
`else
        DT_I8:   begin lo = -64'sd128; hi = 64'sd127; end
`endif
        DT_I16:  begin lo = -64'sd32768; hi = 64'sd32767; end
        default: begin lo = -64'sd2147483648; hi = 64'sd2147483647; end
      endcase
      if (dt != DT_I8 && dt != DT_I16) fit = v[31:0];
      else if (v < lo) fit = lo[31:0];
      else if (v > hi) fit = hi[31:0];
      else fit = v[31:0];
    end
  endfunction

  // x * alpha / 2^16, rounded half to even (x <= 0, alpha <= 1: no saturation needed, but the
  // result goes through fit() anyway).
  function automatic logic signed [63:0] scale_q16(input logic signed [31:0] x,
                                                   input logic [16:0] alpha);
    logic signed [63:0] p, q;
    logic up;
    begin
      p = 64'(x) * $signed({47'd0, alpha});
      q = p >>> 16;
      up = p[15] && (p[14:0] != 15'd0 || q[0]);
      scale_q16 = q + (up ? 64'sd1 : 64'sd0);
    end
  endfunction

  logic reduce_op;
  assign reduce_op = in_op == OP_RSUM || in_op == OP_RMAX || in_op == OP_RMIN;

  // The element-wise lanes.
  logic [31:0] lane_out[LANES];
  for (genvar l = 0; l < LANES; l++) begin : g_lane
    logic signed [31:0] a;
    logic signed [63:0] a64, b64, wide;
    assign a = in_a[l];
    assign a64 = 64'(a);
    assign b64 = 64'($signed(in_b[l]));
    always_comb begin
      case (in_op)
        OP_ADD:   wide = a64 + b64;
        OP_SUB:   wide = a64 - b64;
        OP_MUL:   wide = a64 * b64;
        OP_MAX:   wide = a64 > b64 ? a64 : b64;
        OP_MIN:   wide = a64 < b64 ? a64 : b64;
        OP_RELU:  wide = a64 > 0 ? a64 : 64'sd0;
        OP_LEAKY: wide = a64 > 0 ? a64 : scale_q16(a, in_alpha);
        default:  wide = a64;
      endcase
    end
    assign lane_out[l] = fit(wide, in_dtype);
  end

  // The segmented reduction chain, lane 0 to LANES-1.
  logic [31:0] carry;
  logic [31:0] run[LANES];
  always_comb begin
    logic [31:0] prev;
    prev = carry;
    for (int l = 0; l < LANES; l++) begin
      logic signed [31:0] acc, x;
      acc = prev;
      x = in_a[l];
      if (!in_lane_valid[l]) run[l] = prev;
      else if (in_seg_first[l]) run[l] = x;
      else if (in_op == OP_RMAX) run[l] = acc > x ? acc : x;
      else if (in_op == OP_RMIN) run[l] = acc < x ? acc : x;
      else run[l] = acc + x;
      prev = run[l];
    end
  end

  always_ff @(posedge clk) begin
    if (rst) carry <= '0;
    else if (in_valid && out_ready && reduce_op) carry <= run[LANES-1];
  end

  for (genvar l = 0; l < LANES; l++) begin : g_out
    assign out_data[l] = reduce_op ? run[l] : lane_out[l];
  end
endmodule
