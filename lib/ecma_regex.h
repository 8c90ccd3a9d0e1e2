/*
 * ecma_regex.h - llama-quantize's regular expressions: ECMAScript, as
 * std::regex reads them.
 *
 * llama-quantize's --tensor-type REGEX=TYPE compiles REGEX with std::regex
 * (ECMAScript grammar, the default flags) and picks a tensor when
 * std::regex_search finds it anywhere in the name (llama_tensor_get_type of
 * src/llama-quant.cpp). POSIX regcomp reads another dialect (\d is the
 * letter d, \t the letter t, \< a word start, [] and [^] unlike), so an
 * override chose other tensors than llama-quantize's, unsaid; rewriting the
 * one dialect into the other missed case after case (a breaker's finds).
 * This is the C++ standard library's own engine behind a C interface: the
 * same matches, the same refusals ("Invalid range in '{}'", the NFA state
 * limit that a 30,000-way alternation reaches), from libstdc++ itself.
 */
#ifndef WPACK_ECMA_REGEX_H
#define WPACK_ECMA_REGEX_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wp_ecma_regex wp_ecma_regex;

/* Compile pattern (NUL-terminated, matched as bytes) as std::regex does with
 * its default flags (ECMAScript). Returns the regex, or NULL with
 * std::regex_error's message in err (errlen bytes, cut to fit; "out of
 * memory" when that is why). */
wp_ecma_regex *wp_ecma_regex_new(const char *pattern, char *err, size_t errlen);

/* Whether re matches anywhere in s (std::regex_search): 1 or 0; -1 with the
 * engine's message in err when the search itself fails (std::regex_error:
 * too complex, or its stack exhausted), where llama-quantize ends with an
 * uncaught exception. */
int wp_ecma_regex_search(const wp_ecma_regex *re, const char *s, char *err, size_t errlen);

/* Free re; NULL is a no-op. */
void wp_ecma_regex_free(wp_ecma_regex *re);

#ifdef __cplusplus
}
#endif
#endif
