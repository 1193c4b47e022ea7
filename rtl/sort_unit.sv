// sort_unit: the merge datapath of the sort unit: merges two sorted integer runs, WIDTH
// elements per beat, for the `merge` op with runs <= 2 (isa/semantics/ordering.cpp): stable,
// equal keys are taken from run A (the lower run) first.
//
// Operand stream (in_*): one beat per WIDTH outputs. in_a holds the next WIDTH elements of run A
// from its head (in_a_count of them valid), in_b likewise for run B; values are 32-bit two's
// complement, sign-extended from the dtype. in_emit (<= WIDTH, <= in_a_count + in_b_count) is how
// many outputs this beat makes: WIDTH but for a row's last beat. in_descending reverses the order.
//
// Result stream (out_*): one beat per operand beat: out_data[0 .. in_emit-1] are the next merged
// elements, out_take_a how many of them came from run A (the source moves A's head by out_take_a
// and B's by in_emit - out_take_a before the next beat).
//
// Each of the WIDTH output slots picks, in order, the head of A unless A is exhausted or B's head
// is strictly before it (a strictly smaller key, or larger when descending): the reference's
// greedy merge, so the result equals it even for runs that are not sorted.
//
// Timing. Combinational from operand to result (no fill, no drain): a row of N elements takes
// cdiv(N, WIDTH) beats, and an M-row merge of two runs M * cdiv(N, WIDTH) cycles, the `cycles`
// formula of isa/ops/merge.yaml for runs <= 2 (max(clog2(runs), 1) = 1). Back-pressure:
// out_valid = in_valid, in_ready = out_ready; each stalled cycle adds one. The unit holds no
// state between beats (the heads live in the source), so there is nothing for a reset to clear
// and it has no clock.
//
// FRACSIM_SORT_BUG (a define, used only by the checker's own test) builds a wrong unit that
// compares keys as unsigned numbers.
module sort_unit #(
    parameter int WIDTH = 8,
    localparam int CW = $clog2(WIDTH + 1)  // counts 0..WIDTH
) (
    // operands
    input  logic          in_valid,
    output logic          in_ready,
    input  logic          in_descending,
    input  logic [31:0]   in_a[WIDTH],
    input  logic [CW-1:0] in_a_count,
    input  logic [31:0]   in_b[WIDTH],
    input  logic [CW-1:0] in_b_count,
    input  logic [CW-1:0] in_emit,
    // results
    output logic          out_valid,
    input  logic          out_ready,
    output logic [31:0]   out_data[WIDTH],
    output logic [CW-1:0] out_take_a
);
  localparam int IW = WIDTH > 1 ? $clog2(WIDTH) : 1;  // lane indices
  assign in_ready = out_ready;
  assign out_valid = in_valid;

  // b strictly before a in the requested order.
  function automatic logic b_first(input logic [31:0] b, input logic [31:0] a, input logic desc);
`ifdef FRACSIM_SORT_BUG
    b_first = desc ? (b > a) : (b < a);
`else
    b_first = desc ? ($signed(b) > $signed(a)) : ($signed(b) < $signed(a));
`endif
  endfunction

  always_comb begin
    logic [CW-1:0] ia, ib;
    ia = '0;
    ib = '0;
    for (int k = 0; k < WIDTH; k++) begin
      logic a_ok, b_ok, take_a;
      logic [31:0] xa, xb;
      a_ok = ia < in_a_count;
      b_ok = ib < in_b_count;
      // (An exhausted run's index may be WIDTH: read lane 0 then, and ignore it.)
      xa = a_ok ? in_a[IW'(ia)] : in_a[0];
      xb = b_ok ? in_b[IW'(ib)] : in_b[0];
      take_a = a_ok && !(b_ok && b_first(xb, xa, in_descending));
      out_data[k] = take_a ? xa : xb;
      if (CW'(k) < in_emit) begin
        if (take_a) ia = ia + 1'b1;
        else ib = ib + 1'b1;
      end
    end
    out_take_a = ia;
  end
endmodule
