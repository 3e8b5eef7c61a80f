// Spelling: which of a few known words a mistyped one was meant to be, for the "did you mean"
// of an error message (an unknown command, a misspelt field of a manifest).
//
//   std::string meant = ClosestWord("replica", {"replicas", "restartPolicy", "template"});
//   // meant == "replicas"
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cohort {

// The Levenshtein distance: how many characters must be inserted, deleted or replaced to turn
// `a` into `b`.
size_t EditDistance(const std::string& a, const std::string& b);

// The candidate `word` most likely misspells: the nearest by edit distance (a candidate that
// `word` begins, from two characters on, counts as distance 1), if that distance is at most
// max(2, word's length / 3); "" when none is that near. Case counts: "Replicas" is one edit from
// "replicas". Ties go to the earlier candidate.
std::string ClosestWord(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace cohort
