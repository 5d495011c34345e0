#include "fake_backend.hpp"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "sys/files.hpp"

namespace tandem::testing {

namespace {

class FakeBackend final : public Backend, public GroupAddresses, public Discovery {
public:
    FakeBackend(std::string name, std::shared_ptr<FakeCluster> cluster)
        : m_name(std::move(name)), m_cluster(std::move(cluster)) {}

    const std::string& cluster() const override { return m_name; }
    BackendKind kind() const override { return m_cluster->kind; }
    Result<std::string> check() override { return std::string("fake"); }

    Result<ClusterInventory> inventory(std::chrono::seconds) override {
        ClusterInventory inv;
        inv.name = m_name;
        inv.kind = m_cluster->kind;
        Pool p;
        p.name = "p";
        p.accelerator = "H100";
        p.gpus_per_node = 8;
        p.nodes_total = 4;
        p.nodes_free = 4;
        p.gpus_free = 32;
        p.gpus_total = 32;
        p.cpus_per_node = 8;
        p.memory_gb_per_node = 64;
        p.is_default = true;
        inv.pools.push_back(p);
        return inv;
    }

    Result<std::string> render(const TaskSpec& spec, const Placement&, std::int64_t job_id) override {
        return fmt::format("job {} runs {}", job_id, spec.run);
    }

    Result<std::string> submit(const TaskSpec&, const Placement&, std::int64_t,
                               const JobIdentity& identity) override {
        const std::string& token = identity.token;
        m_cluster->identities.push_back(identity);
        auto& c = *m_cluster;
        if (!c.submit_answers.empty()) {
            auto answer = std::move(c.submit_answers.front());
            c.submit_answers.pop_front();
            if (!answer) {
                return answer;
            }
            take(*answer, token);
            return answer;
        }
        const std::string id = std::to_string(c.next_id++);
        take(id, token);
        if (c.during_submit) {
            c.during_submit();
        }
        if (c.lose_answer) {
            return fail(ErrorKind::timeout, "no answer within 30s");
        }
        return id;
    }

    Result<std::optional<std::string>> find_submitted(const JobRecord& job) override {
        if (m_cluster->refresh_error) {
            return tl::unexpected(*m_cluster->refresh_error);
        }
        auto it = m_cluster->by_token.find(job.submit_token);
        if (it == m_cluster->by_token.end()) {
            return std::optional<std::string>();
        }
        return std::optional<std::string>(it->second);
    }

    Result<std::vector<JobUpdate>> refresh(const std::vector<JobRecord>& jobs) override {
        ++m_cluster->refreshes;
        if (m_cluster->refresh_error) {
            return tl::unexpected(*m_cluster->refresh_error);
        }
        std::vector<JobUpdate> out;
        for (const auto& j : jobs) {
            auto it = m_cluster->states.find(j.remote_id);
            out.push_back(it != m_cluster->states.end() ? it->second
                                                        : fake_update(JobState::pending, "Resources"));
        }
        return out;
    }

    Status cancel(const JobRecord& job) override {
        if (m_cluster->cancel_error) {
            return tl::unexpected(*m_cluster->cancel_error);
        }
        m_cluster->cancelled.push_back(job.remote_id);
        m_cluster->states[job.remote_id] = fake_update(JobState::cancelled, "cancelled");
        return {};
    }

    Status logs(const JobRecord& job, const LogOptions&, const LogSink& sink) override {
        sink("output of " + job.remote_id + "\n");
        return {};
    }

    Capabilities capabilities() override {
        Capabilities c;
        c.group_addresses = this;
        c.discovery = m_cluster->discovery ? this : nullptr;
        return c;
    }

    Result<Discovered> discover(bool all_users) override {
        ++m_cluster->discoveries;
        if (m_cluster->refresh_error) {
            return tl::unexpected(*m_cluster->refresh_error);
        }
        Discovered d;
        d.me = m_cluster->me;
        d.history = "it lists a job for an hour after it ends";
        for (const auto& f : m_cluster->listed) {
            if (f.callers || all_users) {
                d.jobs.push_back(f);
            }
        }
        return d;
    }

    Result<std::optional<std::vector<std::string>>> hosts(const JobRecord& job) override {
        auto it = m_cluster->hosts.find(job.remote_id);
        if (it == m_cluster->hosts.end()) {
            return std::optional<std::vector<std::string>>();
        }
        return std::optional<std::vector<std::string>>(it->second);
    }
    Status publish(const JobRecord&, const std::string& channel, const std::string& book) override {
        m_cluster->published[channel] = book;
        return {};
    }
    Status unpublish(const JobRecord&, const std::string& channel) override {
        m_cluster->unpublished.push_back(channel);
        return {};
    }

private:
    void take(const std::string& id, const std::string& token) {
        m_cluster->submitted.push_back(id);
        m_cluster->by_token[token] = id;
        if (!m_cluster->states.count(id)) {
            m_cluster->states[id] = fake_update(JobState::pending, "Resources");
        }
    }

    std::string m_name;
    std::shared_ptr<FakeCluster> m_cluster;
};

} // namespace

bool FakeWorld::said(const std::string& text) const {
    for (const auto& e : events) {
        if (e.text.find(text) != std::string::npos) {
            return true;
        }
    }
    return false;
}

TempDir::TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tandem-app-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error("mkdtemp failed");
    }
    m_path = pattern;
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

app::Session fake_session(FakeWorld& world, const TempDir& dir) {
    Config config;
    config.discover_kubeconfig = false;
    for (const auto& [name, cluster] : world.clusters) {
        ClusterConfig c;
        c.name = name;
        c.kind = cluster->kind;
        config.clusters.push_back(c);
    }
    app::Seams seams;
    seams.getenv = [](const std::string&) { return std::optional<std::string>(); };
    seams.now = [&world] { return world.now; };
    seams.new_token = [&world] { return fmt::format("token{}", ++world.tokens); };
    seams.current_dir = [&dir] { return dir.path(); };
    seams.host_name = [] { return std::string("laptop"); };
    seams.files = sys::real_files();
    seams.make_backend = [&world](const ClusterConfig& c,
                                  const std::string&) -> Result<std::unique_ptr<Backend>> {
        return std::make_unique<FakeBackend>(c.name, world.clusters.at(c.name));
    };
    seams.events = [&world](const app::Event& e) { world.events.push_back(e); };
    return app::Session(Paths{dir.path() + "/config.yaml", dir.path() + "/state"}, std::move(config),
                        std::move(seams));
}

JobUpdate fake_update(JobState state, std::string reason, std::optional<int> exit_code) {
    JobUpdate u;
    u.state = state;
    u.reason = std::move(reason);
    u.exit_code = exit_code;
    return u;
}

TaskSpec fake_task(const std::string& name) {
    TaskSpec spec;
    spec.name = name;
    spec.run = "true";
    return spec;
}

Placement fake_placement(const std::string& cluster) {
    Placement p;
    p.cluster = cluster;
    p.kind = BackendKind::slurm;
    p.pool = "p";
    p.option_label = "default";
    return p;
}

} // namespace tandem::testing
