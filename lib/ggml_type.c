/* ggml_type.c - ggml type geometry table (see ggml_type.h). Source: llama.cpp
 * ggml/src/ggml.c type_traits, read through ggml_blck_size()/ggml_type_size()
 * of the pinned libggml-base. */
#include "ggml_type.h"

#include <string.h>
#include <strings.h>

struct type_info { const char *name; int blck; unsigned size; };

static const struct type_info types[WP_GGML_TYPE_COUNT] = {
    [WP_F32] = {"F32", 1, 4},        [WP_F16] = {"F16", 1, 2},
    [WP_Q4_0] = {"Q4_0", 32, 18},    [WP_Q4_1] = {"Q4_1", 32, 20},
    [WP_Q5_0] = {"Q5_0", 32, 22},    [WP_Q5_1] = {"Q5_1", 32, 24},
    [WP_Q8_0] = {"Q8_0", 32, 34},    [WP_Q8_1] = {"Q8_1", 32, 36},
    [WP_Q2_K] = {"Q2_K", 256, 84},   [WP_Q3_K] = {"Q3_K", 256, 110},
    [WP_Q4_K] = {"Q4_K", 256, 144},  [WP_Q5_K] = {"Q5_K", 256, 176},
    [WP_Q6_K] = {"Q6_K", 256, 210},  [WP_Q8_K] = {"Q8_K", 256, 292},
    [WP_IQ2_XXS] = {"IQ2_XXS", 256, 66}, [WP_IQ2_XS] = {"IQ2_XS", 256, 74},
    [WP_IQ3_XXS] = {"IQ3_XXS", 256, 98}, [WP_IQ1_S] = {"IQ1_S", 256, 50},
    [WP_IQ4_NL] = {"IQ4_NL", 32, 18},   [WP_IQ3_S] = {"IQ3_S", 256, 110},
    [WP_IQ2_S] = {"IQ2_S", 256, 82},    [WP_IQ4_XS] = {"IQ4_XS", 256, 136},
    [WP_I8] = {"I8", 1, 1},   [WP_I16] = {"I16", 1, 2}, [WP_I32] = {"I32", 1, 4},
    [WP_I64] = {"I64", 1, 8}, [WP_F64] = {"F64", 1, 8},
    [WP_IQ1_M] = {"IQ1_M", 256, 56},  [WP_BF16] = {"BF16", 1, 2},
    [WP_TQ1_0] = {"TQ1_0", 256, 54},  [WP_TQ2_0] = {"TQ2_0", 256, 66},
    [WP_MXFP4] = {"MXFP4", 32, 17},   [WP_NVFP4] = {"NVFP4", 64, 36},
    [WP_Q1_0] = {"Q1_0", 128, 18},    [WP_Q2_0] = {"Q2_0", 64, 18},
};

int wp_ggml_is_float(uint32_t type) { return type == WP_F32 || type == WP_F16 || type == WP_BF16; }

int wp_ggml_blck_size(uint32_t type)
{
    return type < WP_GGML_TYPE_COUNT ? types[type].blck : 0;
}

size_t wp_ggml_type_size(uint32_t type)
{
    return type < WP_GGML_TYPE_COUNT ? types[type].size : 0;
}

const char *wp_ggml_type_name(uint32_t type)
{
    return type < WP_GGML_TYPE_COUNT ? types[type].name : NULL;
}

int wp_ggml_type_from_name(const char *name)
{
    for (int t = 0; t < WP_GGML_TYPE_COUNT; t++)
        if (types[t].name && strcasecmp(types[t].name, name) == 0)
            return t;
    return -1;
}

size_t wp_ggml_row_size(uint32_t type, int64_t ne0)
{
    int b = wp_ggml_blck_size(type);
    if (b <= 0 || ne0 < 0 || ne0 % b)
        return 0;
    return (size_t)(ne0 / b) * types[type].size;
}

int wp_ggml_is_quantized(uint32_t type)
{
    return wp_ggml_blck_size(type) > 1;
}
