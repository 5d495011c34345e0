#pragma once
// A SubmitPlan with every field set, as the Slurm backend would build it for a 2-node H100 job.

#include "backends/slurm/slurm_model.hpp"

inline tandem::slurm::SubmitPlan full_plan() {
    tandem::slurm::SubmitPlan p;
    p.tandem_id = 42;
    p.submit_token = "tandem-7f3a9c";
    p.job_name = "train";
    p.partition = "gpu";
    p.nodes = 2;
    p.gpus_per_node = 8;
    p.gres_type = "h100";
    p.cpus_per_task = 16;
    p.memory_mb_per_node = 65536;
    p.tmp_disk_mb = 102400;
    p.time_limit_minutes = 1 * 24 * 60 + 4 * 60 + 5; // 1-04:05:00
    p.account.emplace("lab");
    p.qos.emplace("normal");
    p.constraint.emplace("h100&ib");
    p.working_directory = "/home/u/project";
    p.output_pattern = "/home/u/.tandem/slurm/%j.out";
    p.environment = {{"GREETING", "hi"}, {"HF_TOKEN", "s3cr3t"}};
    return p;
}

inline tandem::slurm::SubmitPlan minimal_plan() {
    tandem::slurm::SubmitPlan p;
    p.tandem_id = 7;
    p.job_name = "hello";
    p.time_limit_minutes = 10;
    return p;
}
