// srun --label output -> what `logs` prints, fed in arbitrary chunks.

#include <catch2/catch.hpp>

#include "backends/slurm/rank_output.hpp"

using namespace tandem::slurm;

namespace {

std::string through(RankOutput out, const std::string& text, std::size_t chunk) {
    std::string shown;
    for (std::size_t i = 0; i < text.size(); i += chunk) {
        shown += out.feed(std::string_view(text).substr(i, chunk));
    }
    return shown + out.finish();
}

const std::string k_two_nodes =
    "1: hi from 1\n0: hi from 0\n1: err\n0: \ntandem: a notice\n0: 1: looks like a label\n"
    "1: partial";

} // namespace

TEST_CASE("a multi-node job's lines carry their rank, whatever the chunking") {
    for (std::size_t chunk : {1, 3, 7, 1000}) {
        INFO(chunk);
        CHECK(through(RankOutput(2, std::nullopt), k_two_nodes, chunk) ==
              "[rank 1] hi from 1\n[rank 0] hi from 0\n[rank 1] err\n[rank 0] \ntandem: a notice\n"
              "[rank 0] 1: looks like a label\n[rank 1] partial");
    }
}

TEST_CASE("rank output with --node K: only K's lines, without the label, and no unlabelled lines") {
    CHECK(through(RankOutput(2, 1), k_two_nodes, 5) == "hi from 1\nerr\npartial");
    CHECK(through(RankOutput(2, 0), k_two_nodes, 2) == "hi from 0\n\n1: looks like a label\n");
}

TEST_CASE("a one-node job shows its text alone, and padded labels of 10+ ranks are read") {
    CHECK(through(RankOutput(1, std::nullopt), "0: a\n0: b\n", 4) == "a\nb\n");
    CHECK(through(RankOutput(12, std::nullopt), " 3: x\n11: y\n", 2) == "[rank 3] x\n[rank 11] y\n");
    CHECK(through(RankOutput(12, 3), " 3: x\n11: y\n 3:\n", 2) == "x\n\n");
    CHECK(through(RankOutput(2, std::nullopt), "", 1).empty());
}
