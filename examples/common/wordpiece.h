/* A BERT WordPiece tokenizer read from a Hugging Face tokenizer.json, giving
 * the ids that file's own tokenizer gives (tests/test_wordpiece.c compares
 * with ids from tools/wordpiece_reference.py):
 *
 *   1. added tokens (tokenizer.json's "added_tokens", e.g. "[MASK]") are
 *      matched in the raw text, leftmost then longest, and give their id;
 *   2. the BERT normalizer on the text between them, as its flags say:
 *      clean_text drops U+0000, U+FFFD and characters of categories Cc, Cf,
 *      Co, Cs (not tab, LF, CR) and turns White_Space into a space;
 *      handle_chinese_chars puts spaces around CJK ideographs; strip_accents
 *      (null: as lowercase) applies NFD and drops category Mn; lowercase
 *      maps each character by its full lowercase mapping;
 *   3. the BERT pre-tokenizer: split on White_Space, and every punctuation
 *      character (category P*, or ASCII punctuation such as '$' or '+') is
 *      a word of its own;
 *   4. WordPiece on each word: greedy longest match first from the start,
 *      later pieces with the continuing prefix ("##"); a word with a part
 *      that matches nothing, or longer than max_input_chars_per_word
 *      characters, is the unknown token;
 *   5. the post-processor's template ("TemplateProcessing" single, or
 *      "BertProcessing"): [CLS] before, [SEP] after.
 *
 * Truncation is the caller's max_len, as sentence-transformers does with its
 * max_seq_length (256 for all-MiniLM-L6-v2); tokenizer.json's own
 * "truncation" and "padding" are ignored (its 128 is not sentence-
 * transformers' 256). Character data comes from unicode.h's tables
 * (Python's unicodedata); the reference library mixes Unicode versions, and
 * tools/wordpiece_reference.py --unicode-check lists where the two differ:
 * against unicodedata 14.0, tokenizers 0.23.3 differs on 559 of 1,112,064
 * code points: 501 marks (Mn), format characters (Cf) and punctuation,
 * mostly added in Unicode 9 to 14, that it keeps or leaves inside words;
 * 55 letters assigned after 14.0 that it lowercases; and U+1734,
 * U+11938, U+166D, whose category or decomposition changed. Every other
 * code point is normalized and split the same way.
 *
 * Everything is read from the file: vocabulary, unknown token, continuing
 * prefix, word length limit, normalizer flags, special tokens. A file with
 * another model, normalizer, pre-tokenizer or post-processor type, or added
 * tokens with options this reader does not implement (normalized,
 * single_word, lstrip, rstrip), is refused with a message. */
#ifndef WGC_EXAMPLES_WORDPIECE_H
#define WGC_EXAMPLES_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

typedef struct wp_tokenizer wp_tokenizer;

/* Reads tokenizer.json at path; 0 and *out set, or nonzero and a message
 * naming the file and the offending item. */
int wp_load(const char *tokenizer_json_path, wp_tokenizer **out, char *err,
            size_t errlen);
/* The same from the file's bytes (copied; the caller may free them). */
int wp_load_memory(const char *json, size_t len, wp_tokenizer **out, char *err,
                   size_t errlen);
/* Tokenizes utf8[0..len) into ids: the template's leading specials, the
 * text's tokens, the trailing specials, truncated to max_len ids in all
 * (specials included, text tokens cut from the end). ids must hold max_len
 * entries; *n_ids gets the count. Errors (nothing written to *n_ids):
 * invalid UTF-8 (the message gives the byte offset), max_len smaller than
 * the specials, NULL arguments, out of memory. */
int wp_encode(const wp_tokenizer *t, const char *utf8, size_t len,
              size_t max_len, int32_t *ids, size_t *n_ids, char *err,
              size_t errlen);
/* The id of a vocabulary entry, -1 if absent. */
int32_t wp_token_id(const wp_tokenizer *t, const char *token);
void wp_free(wp_tokenizer *t);

#endif
