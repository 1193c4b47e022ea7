// matrix_unit: an output-stationary, systolic ROWS x COLS MAC array (int8 or int16 inputs, int32
// accumulation with two's-complement wrap-around, the reference rule of isa/semantics/linear.cpp).
//
// Operand stream (in_*): one beat per k of a block: in_a holds column k of the block's a tile
// (ROWS lanes of 16 bits, lane r = a[m0+r, k]), in_b row k of its b tile (COLS lanes, lane c =
// b[k, n0+c]). in_first marks k = 0 (the accumulators start from 0), in_last k = K-1 (the block is
// complete). in_i16 selects int16 lanes; when 0 each lane is int8 in its low byte (sign-extended
// from bit 7). in_i16 travels with the beat, so blocks of either width may follow each other.
//
// Result stream (out_*): one beat per block, the whole ROWS x COLS block of int32 sums; lane
// r*COLS + c holds out[m0+r, n0+c].
//
// Timing. Row r of the operands is skewed by r cycles and column c by c cycles, and both travel
// through the array one PE per cycle: PE(r,c) sees a beat r+c cycles after the cycle in which it
// was accepted (PE(0,0) in that same cycle). PE(r,c) finishes a block ROWS+COLS-2-(r+c) cycles
// before PE(ROWS-1,COLS-1); its sum waits those cycles in a per-PE ring so that the whole block
// reaches the result registers together. (Every ring has ROWS+COLS-1 entries, more than most PEs
// need, so that one shared index serves them all: simple first, area later.)
// With beats accepted back to back from cycle 0, the last beat of a job of BLK blocks of K beats
// is accepted in cycle BLK*K - 1, reaches PE(ROWS-1,COLS-1) in cycle BLK*K + ROWS + COLS - 3, and
// its block is offered on out_* in cycle BLK*K + ROWS + COLS - 2: the job takes
// BLK*K + ROWS + COLS - 1 cycles, the matmul `cycles` formula of isa/ops/matmul.yaml.
//
// Back-pressure: while a result beat waits (out_valid && !out_ready) the whole unit holds still
// (one enable for every register) and in_ready is low, so nothing is lost or duplicated and each
// stalled cycle adds exactly one cycle. in_ready depends combinationally on out_ready (never on
// in_valid), which valid/ready allows.
//
// Reset (synchronous, active high) empties the pipeline: every valid flag and the ring index.
//
// FRACSIM_MATRIX_BUG (a define, used only by the checker's own test) builds a wrong unit whose
// accumulators drop the carry from bit 15 to bit 16.
module matrix_unit #(
    parameter int ROWS = 4,
    parameter int COLS = 4
) (
    input  logic                     clk,
    input  logic                     rst,
    // operands
    input  logic                     in_valid,
    output logic                     in_ready,
    input  logic [ROWS*16-1:0]       in_a,
    input  logic [COLS*16-1:0]       in_b,
    input  logic                     in_first,
    input  logic                     in_last,
    input  logic                     in_i16,
    // results
    output logic                     out_valid,
    input  logic                     out_ready,
    output logic [31:0]              out_data[ROWS*COLS]  // lane r*COLS+c: out[m0+r, n0+c]
);
  // Ring entries: the longest wait for the last PE (ROWS+COLS-2 cycles) + 1.
  localparam int RING = ROWS + COLS - 1;
  localparam int RING_W = RING > 1 ? $clog2(RING) : 1;

  logic en;
  assign en = !out_valid || out_ready;
  assign in_ready = en;

  // Ring index: advances once per enabled cycle, wraps at RING.
  logic [RING_W-1:0] slot;
  always_ff @(posedge clk) begin
    if (rst) slot <= '0;
    else if (en) slot <= (slot == RING_W'(RING - 1)) ? '0 : slot + 1'b1;
  end

  // The beat's operands, sign-extended to 16 bits. PE(0,0) takes them in the cycle they are
  // accepted (no input register: that keeps the fill at ROWS + COLS - 1 cycles).
  logic [15:0] a_in[ROWS];
  logic [15:0] b_in[COLS];
  for (genvar r = 0; r < ROWS; r++) begin : g_in_a
    assign a_in[r] = in_i16 ? in_a[r*16+:16] : {{8{in_a[r*16+7]}}, in_a[r*16+:8]};
  end
  for (genvar c = 0; c < COLS; c++) begin : g_in_b
    assign b_in[c] = in_i16 ? in_b[c*16+:16] : {{8{in_b[c*16+7]}}, in_b[c*16+:8]};
  end

  // The wavefront: PE(r,c) works on a beat r+c cycles after it was accepted. Every PE on one
  // anti-diagonal sees the same delay, so each control flag needs one delay line for the whole
  // array (bit d-1 = delay d; delay 0 is the input itself). Row r's a values pass through a line
  // of r+COLS-1 registers (the first r are its skew, then one per PE to the right); column c's
  // b values likewise, c+ROWS-1 registers. Each register is a signal of its own: Verilator
  // simulates that much faster than slices of one wide vector.
  localparam int DIAG = ROWS + COLS - 2;  // the largest delay, PE(ROWS-1, COLS-1)'s
  localparam int LINE = DIAG > 0 ? DIAG : 1;
  logic [LINE-1:0] v_q, first_q, last_q;
  always_ff @(posedge clk) begin
    if (rst) v_q <= '0;
    else if (en) v_q <= (v_q << 1) | LINE'(in_valid);
    if (en) begin
      first_q <= (first_q << 1) | LINE'(in_first);
      last_q <= (last_q << 1) | LINE'(in_last);
    end
  end
  for (genvar r = 0; r < ROWS; r++) begin : g_a_line
    for (genvar j = 0; j < r + COLS - 1; j++) begin : g_stage  // q = a_in[r] delayed j+1
      logic [15:0] q;
      if (j == 0) begin : g_first
        always_ff @(posedge clk) if (en) q <= a_in[r];
      end else begin : g_next
        always_ff @(posedge clk) if (en) q <= g_stage[j-1].q;
      end
    end
  end
  for (genvar c = 0; c < COLS; c++) begin : g_b_line
    for (genvar j = 0; j < c + ROWS - 1; j++) begin : g_stage  // q = b_in[c] delayed j+1
      logic [15:0] q;
      if (j == 0) begin : g_first
        always_ff @(posedge clk) if (en) q <= b_in[c];
      end else begin : g_next
        always_ff @(posedge clk) if (en) q <= g_stage[j-1].q;
      end
    end
  end

  // PE(ROWS-1,COLS-1) finishes a block this cycle: the whole block loads the result registers.
  logic emit;

  // The ring slot a sum that waits w cycles is written to: slot + w, wrapped at RING. Every PE on
  // one anti-diagonal waits as long, so one index per wait serves them all (computed once per
  // wait, not once per PE: less work per simulated cycle).
  for (genvar w = 1; w <= DIAG; w++) begin : g_wr
    logic [RING_W:0] wr_sum;
    logic [RING_W-1:0] wr;
    assign wr_sum = {1'b0, slot} + (RING_W + 1)'(w);
    assign wr = (wr_sum >= (RING_W + 1)'(RING)) ? RING_W'(wr_sum - (RING_W + 1)'(RING))
                                               : wr_sum[RING_W-1:0];
  end

  for (genvar r = 0; r < ROWS; r++) begin : g_row
    for (genvar c = 0; c < COLS; c++) begin : g_col
      localparam int D = r + c;
      // Cycles this PE's finished sum waits for PE(ROWS-1, COLS-1).
      localparam int WAIT = DIAG - D;

      logic [15:0] a, b;
      logic v, first, last;
      if (D == 0) begin : g_input
        assign {a, b, v, first, last} = {a_in[0], b_in[0], in_valid, in_first, in_last};
      end else begin : g_delayed
        assign a = g_a_line[r].g_stage[D-1].q;
        assign b = g_b_line[c].g_stage[D-1].q;
        assign {v, first, last} = {v_q[D-1], first_q[D-1], last_q[D-1]};
      end

      // The MAC: acc + a*b modulo 2^32.
      logic [31:0] acc, prod, base, sum;
      // The signed product modulo 2^32, as the unsigned product of the operands sign-extended to
      // 32 bits (the same bits; the simulation then multiplies inline, with no helper call).
      assign prod = {{16{a[15]}}, a} * {{16{b[15]}}, b};
      assign base = first ? 32'd0 : acc;
`ifdef FRACSIM_MATRIX_BUG
      assign sum = {base[31:16] + prod[31:16], base[15:0] + prod[15:0]};
`else
      assign sum = base + prod;
`endif
      always_ff @(posedge clk) if (en && v) acc <= sum;

      // The result lane: the finished sum, WAIT cycles later, loads with the whole block.
      logic [31:0] res_q;
      if (WAIT == 0) begin : g_last_pe
        assign emit = v && last;
        always_ff @(posedge clk) if (en && emit) res_q <= sum;
      end else begin : g_ring
        logic [31:0] ring[RING];
        always_ff @(posedge clk) begin
          if (en && v && last) ring[g_wr[WAIT].wr] <= sum;
          if (en && emit) res_q <= ring[slot];
        end
      end
      assign out_data[r*COLS+c] = res_q;
    end
  end

  always_ff @(posedge clk) begin
    if (rst) out_valid <= 1'b0;
    else if (en) out_valid <= emit;
  end
endmodule
