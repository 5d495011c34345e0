#pragma once
// A Slurm job's output file holds every node's lines: the script runs its one task per node under
// `srun --label`, which starts each line with the task's rank ("0: ", or " 0: " when ranks need two
// digits; with one task per node the task rank is the node rank). This turns that file, as it arrives
// in chunks, into what `logs` prints: for a multi-node job every line as "[rank K] text"; for one node the
// text alone; with --node K only K's lines, unprefixed. Lines the batch script itself wrote (no label:
// tandem's own notices, Slurm's errors) are shown as they are, except when one node is asked for.

#include <optional>
#include <string>
#include <string_view>

namespace tandem::slurm {

class RankOutput {
public:
    RankOutput(int num_nodes, std::optional<int> node) : m_prefix(num_nodes > 1), m_node(node) {}

    // What to print for this chunk; a line is held back until its newline arrives.
    std::string feed(std::string_view chunk);
    // What is left (a last line without a newline).
    std::string finish();

private:
    std::optional<std::string> line(std::string_view text) const; // nullopt: not shown

    bool m_prefix;
    std::optional<int> m_node;
    std::string m_partial;
};

} // namespace tandem::slurm
