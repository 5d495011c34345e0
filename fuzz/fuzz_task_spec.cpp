// A task file through the real loader (core/task_group.hpp load_task_text): YAML documents -> a task, a
// pipeline or a job group, or diagnostics. Invariants: exactly one of the three, and every diagnostic prints
// as one line (format_diagnostics prints one per line).

#include "core/task_group.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto load = tandem::load_task_text(fuzz::text(data, size), "task.yaml", tandem::SpecOverrides{},
                                             tandem::LoadOptions{});
    const int outcomes = (load.task ? 1 : 0) + (load.group ? 1 : 0) + (load.diagnostics.empty() ? 0 : 1);
    fuzz::check(outcomes == 1, "load_task_text: exactly one of task, group, diagnostics");
    for (const auto& d : load.diagnostics) {
        const std::string line = tandem::format_diagnostic(d);
        fuzz::check(fuzz::one_line(line), "format_diagnostic gives one line", line);
    }
    if (load.task) {
        (void)tandem::check_backend_support(
            *load.task,
            {tandem::BackendKind::local, tandem::BackendKind::slurm, tandem::BackendKind::kubernetes});
    }
    return 0;
}
