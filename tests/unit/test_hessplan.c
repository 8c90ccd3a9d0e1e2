/* test_hessplan.c - lib/hessplan.c, hessian(1)'s passes: whole layers while
 * they fit, a layer split between weights, a weight too large (grown to, or
 * refused), weights that read one input (collected with the weight that
 * holds the H; a lead left in an earlier pass: shared, or an H of its own and
 * the plan made again), and the default --max-memory. */
#include <string.h>

#include "hessplan.h"
#include "tap.h"

#define KiB 1024ull

/* weight k: cols c (c x c doubles: 8c^2 bytes), its layer from the name */
static wp_hessplan_weight wt(const char *name, int64_t c, int lead)
{
    return (wp_hessplan_weight){name, c, 1, wp_hessplan_layer(name), lead, -1};
}

/* the passes of n weights as a string "0 0 1 1 2" */
static const char *passes(const wp_hessplan_weight *w, int n, char *buf)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < n; k++)
        len += (size_t)sprintf(buf + len, "%s%d", k ? " " : "", w[k].pass);
    return buf;
}

int main(void)
{
    char err[256], b[64];
    CHECK(wp_hessplan_layer("blk.12.attn_q.weight") == 12 && wp_hessplan_layer("blk.0.ffn_up.weight") == 0,
          "blk.N.: layer N");
    CHECK(wp_hessplan_layer("output.weight") == -1 && wp_hessplan_layer("blk.x.attn_q.weight") == -1 &&
              wp_hessplan_layer("blk.3") == -1 && wp_hessplan_layer("blk.-1.a") == -1 &&
              wp_hessplan_layer("blk.99999999999.a") == -1,
          "other names, no number, no dot after it, a sign, past int: -1");

    /* 64 columns: 32 KiB an H; 3 layers of 2 weights, then output.weight */
    wp_hessplan_weight w[7] = {wt("blk.0.a", 64, 0), wt("blk.0.b", 64, 1), wt("blk.1.a", 64, 2),
                               wt("blk.1.b", 64, 3), wt("blk.2.a", 64, 4), wt("blk.2.b", 64, 5),
                               wt("output.weight", 64, 6)};
    CHECK(wp_hessplan_bytes(w, 0) == 32 * KiB, "an H of 64 columns: 32 KiB");
    uint64_t mem = 1 << 20;
    CHECK(wp_hessplan_make(w, 7, &mem, 0, 0, err, sizeof err) == 1 && mem == 1 << 20 &&
              !strcmp(passes(w, 7, b), "0 0 0 0 0 0 0"),
          "room for all: one pass (%s)", b);
    mem = 64 * KiB;
    CHECK(wp_hessplan_make(w, 7, &mem, 0, 0, err, sizeof err) == 4 && !strcmp(passes(w, 7, b), "0 0 1 1 2 2 3"),
          "room for a layer: a layer a pass, output.weight its own (%s)", b);
    mem = 100 * KiB;
    CHECK(wp_hessplan_make(w, 7, &mem, 0, 0, err, sizeof err) == 3 && !strcmp(passes(w, 7, b), "0 0 1 1 2 2 2"),
          "room for a layer and a half: whole layers, output.weight with the last (%s)", b);
    mem = 40 * KiB;
    CHECK(wp_hessplan_make(w, 7, &mem, 0, 0, err, sizeof err) == 7 && !strcmp(passes(w, 7, b), "0 1 2 3 4 5 6"),
          "room for one H: layers split between weights (%s)", b);
    mem = 20 * KiB;
    CHECK(wp_hessplan_make(w, 7, &mem, 0, 0, err, sizeof err) == -1 &&
              !strcmp(err, "--max-memory: 20480 bytes cannot hold the Hessian of blk.0.a (32768 bytes)"),
          "an H larger than an explicit bound: refused, named (%s)", err);
    mem = 0;
    CHECK(wp_hessplan_make(w, 7, &mem, 1, 0, err, sizeof err) == 7 && mem == 32 * KiB &&
              !strcmp(passes(w, 7, b), "0 1 2 3 4 5 6"),
          "the default bound (grow) below an H: raised to it, one H a pass (%s)", b);

    /* b and c read a's input (lead 0): only a holds an H; a layer of 2 H in all */
    wp_hessplan_weight s[5] = {wt("blk.0.a", 64, 0), wt("blk.0.b", 64, 0), wt("blk.0.c", 64, 0),
                               wt("blk.0.d", 64, 3), wt("blk.1.a", 64, 4)};
    CHECK(wp_hessplan_bytes(s, 1) == 0 && wp_hessplan_bytes(s, 0) == 32 * KiB, "a weight led by another holds none");
    mem = 64 * KiB;
    CHECK(wp_hessplan_make(s, 5, &mem, 0, 0, err, sizeof err) == 2 && !strcmp(passes(s, 5, b), "0 0 0 0 1") &&
              s[1].lead == 0 && s[2].lead == 0,
          "a layer of 4 weights and 2 H fits 64 KiB (%s)", b);
    /* phi2's form: a, d, then c reading a's input; room for one H a pass */
    wp_hessplan_weight p[3] = {wt("blk.0.qkv", 64, 0), wt("blk.0.out", 64, 1), wt("blk.0.up", 64, 0)};
    mem = 40 * KiB;
    CHECK(wp_hessplan_make(p, 3, &mem, 0, 1, err, sizeof err) == 2 && !strcmp(passes(p, 3, b), "0 1 0") &&
              p[2].lead == 0,
          "shared: a weight left after its lead's pass is collected with it (%s)", b);
    p[2].lead = 0;
    CHECK(wp_hessplan_make(p, 3, &mem, 0, 0, err, sizeof err) == 3 && !strcmp(passes(p, 3, b), "0 1 2") &&
              p[2].lead == 2,
          "not shared: it takes an H of its own, planned again in first-use order (%s)", b);

    /* experts: n_expert H */
    wp_hessplan_weight e[1] = {wt("blk.0.ffn_up_exps.weight", 64, 0)};
    e[0].n_expert = 8;
    CHECK(wp_hessplan_bytes(e, 0) == 256 * KiB, "8 experts of 64 columns: 256 KiB");
    CHECK(wp_hessplan_make(e, 0, &mem, 0, 0, err, sizeof err) == 0, "no weights: no pass");

    const uint64_t GiB = 1ull << 30;
    CHECK(wp_hessplan_default_memory(24 * GiB, 13500000000ull) == 24 * GiB - 13500000000ull - 3 * GiB,
          "24 GiB and a 7B F16 model (13.5 GB): what is left past the model and an eighth (8.4 GiB)");
    CHECK(wp_hessplan_default_memory(24 * GiB, 1000) == 12 * GiB, "a small model: half the memory");
    CHECK(wp_hessplan_default_memory(24 * GiB, 22 * GiB) == 0, "a model that leaves nothing: 0");
    return tap_done();
}
