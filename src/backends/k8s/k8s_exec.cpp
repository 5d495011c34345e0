// `tandem exec` and `tandem shell` on Kubernetes: pods/exec of the rank's pod through the API server,
// upgraded to a WebSocket with Kubernetes' channel protocol (v5.channel.k8s.io where the server offers
// it, else v4): each message's first byte is its channel, 0 stdin, 1 stdout, 2 stderr, 3 error (the
// command's end as a metav1.Status: Success, or NonZeroExitCode with the code in details.causes), 4
// resize ({"Width","Height"}), and with v5 255 (a stream closed: [255, 0] is stdin's end).

#include <poll.h>
#include <chrono>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/k8s/kube_api.hpp"

namespace tandem::k8s {

namespace {

constexpr char k_stdin = 0, k_stdout = 1, k_stderr = 2, k_error = 3, k_resize = 4;
constexpr unsigned char k_close = 255;

// The exit code a Status on the error channel stands for; an error for a Status that is neither.
Result<int> exit_code_of(std::string_view text, const std::string& who) {
    const auto status = nlohmann::json::parse(text, nullptr, false);
    if (!status.is_object()) {
        return fail(ErrorKind::remote, who + ": the exec's end is not a Status");
    }
    if (status.value("status", "") == "Success") {
        return 0;
    }
    if (status.value("reason", "") == "NonZeroExitCode") {
        const auto causes = status.value("details", nlohmann::json::object()).value("causes", nlohmann::json::array());
        for (const auto& c : causes.is_array() ? causes : nlohmann::json::array()) {
            if (c.is_object() && c.value("reason", "") == "ExitCode") {
                const std::string code = c.value("message", "");
                int n = 0;
                if (!code.empty() && code.size() < 6 && code.find_first_not_of("0123456789") == std::string::npos) {
                    n = std::stoi(code);
                    return n;
                }
            }
        }
    }
    std::string message = status.value("message", "the command failed");
    for (auto& ch : message) {
        ch = ch == '\n' || ch == '\r' ? ' ' : ch;
    }
    return fail(ErrorKind::remote, who + ": " + message.substr(0, 400));
}

} // namespace

Result<std::pair<std::string, std::string>> K8sBackend::running_pod(const JobRecord& job, const std::string& ns,
                                                                    const std::string& base, int rank) {
    auto pods = rank_pods(ns, base);
    if (!pods) {
        return tl::unexpected(pods.error());
    }
    auto it = pods->find(rank);
    if (it == pods->end() || fields::str_at(it->second, "status", "phase") != "Running") {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("job {} has no running pod for rank {} on {}",
                                job.id, rank, m_cluster));
    }
    const std::string pod = fields::str_at(it->second, "metadata", "name");
    const auto containers = it->second.value("spec", nlohmann::json::object()).value("containers", nlohmann::json::array());
    const std::string container =
        containers.is_array() && !containers.empty() && containers[0].is_object() ? containers[0].value("name", "") : "";
    return std::make_pair(pod, container);
}

Result<int> K8sBackend::exec(const JobRecord& job, const ExecRequest& request, ExecIo& io) {
    const auto [ns, base] = split_remote_id(job.remote_id, m_settings.namespace_name);
    auto found = running_pod(job, ns, base, request.node);
    if (!found) {
        return tl::unexpected(found.error());
    }
    const auto& [pod, container] = *found;
    std::vector<std::string> command = request.command;
    if (command.empty()) { // a login shell: bash where the image has it
        command = {"/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi"};
    }
    PodExecIo pod_io;
    pod_io.input_fd = io.input_fd;
    pod_io.out = io.out;
    pod_io.err = io.err;
    pod_io.size = io.size;
    pod_io.resized = io.resized;
    return exec_in_pod(ns, pod, container, command, request.tty, pod_io);
}

Result<int> K8sBackend::attach(const JobRecord& job, int node, ExecIo& io) {
    const auto [ns, base] = split_remote_id(job.remote_id, m_settings.namespace_name);
    auto found = running_pod(job, ns, base, node);
    if (!found) {
        return tl::unexpected(found.error());
    }
    const auto& [pod, container] = *found;
    PodExecIo pod_io;
    pod_io.out = io.out;
    pod_io.err = io.err;
    auto streamed = exec_in_pod(ns, pod, container, {}, false, pod_io, "attach");
    if (!streamed) {
        return tl::unexpected(streamed.error());
    }
    // The stream ends with the container; its exit code is in the pod's status (a kubelet's attach does
    // not carry it). The kubelet reports the end a moment after the stream closes: ask a few times.
    for (int attempt = 0; attempt < 40; ++attempt) {
        auto now = m_api.call("GET", fmt::format("/api/v1/namespaces/{}/pods/{}", ns, query_escape(pod)));
        if (!now) {
            return tl::unexpected(now.error());
        }
        if (const auto* list = fields::at(now->body, "status", "containerStatuses"); list && list->is_array()) {
            for (const auto& cs : *list) {
                const auto* code = fields::at(cs, "state", "terminated", "exitCode");
                if (fields::str_at(cs, "name") == container && code && code->is_number_integer()) {
                    return code->get<int>();
                }
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return fail(ErrorKind::unavailable,
                fmt::format("{}: the attach stream of pod {} ended, but its container is still running", m_cluster, pod),
                fmt::format("tandem attach {} again, or tandem logs -f {}", job.id, job.id));
}

Result<int> K8sBackend::exec_in_pod(const std::string& ns, const std::string& pod, const std::string& container,
                                    const std::vector<std::string>& command, bool tty, PodExecIo& io,
                                    std::string_view subresource) {
    std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}/{}?container={}&stdout=true", ns, pod, subresource,
                                   query_escape(container));
    path += tty ? "&tty=true" : "&stderr=true";
    const bool pulled = static_cast<bool>(io.produce);
    if (io.input_fd >= 0 || pulled) {
        path += "&stdin=true";
    }
    for (const auto& word : command) {
        path += "&command=" + query_escape(word);
    }
    auto ws = m_api.websocket(path, {"v5.channel.k8s.io", "v4.channel.k8s.io"});
    if (!ws) {
        return tl::unexpected(ws.error());
    }
    net::WebSocket& socket = **ws;
    const bool v5 = socket.protocol() == "v5.channel.k8s.io";
    const std::string who = fmt::format("{}: exec in pod {}", m_cluster, pod);
    auto send_resize = [&](TtySize size) {
        return socket.send(net::ws_op::binary, std::string(1, k_resize) +
                                                   fmt::format("{{\"Width\":{},\"Height\":{}}}", size.columns, size.rows));
    };
    if (tty) {
        if (auto ok = send_resize(io.size); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    bool input_open = io.input_fd >= 0 || pulled;
    auto close_input = [&] {
        input_open = false;
        if (v5) { // v4 has no way to say it: the command keeps its stdin open
            const char close_stdin[2] = {static_cast<char>(k_close), k_stdin};
            (void)socket.send(net::ws_op::binary, std::string_view(close_stdin, 2));
        }
    };
    // A pulled input goes out in frames of this size (kubectl sends 32 KiB; fewer, larger frames cost less).
    std::string frame(pulled ? 256 * 1024 : 32 * 1024, '\0');
    std::optional<int> exit_code;
    std::vector<net::WebSocketMessage> messages;
    for (;;) {
        const bool pull_now = input_open && pulled;
        pollfd p[2] = {{socket.fd(), POLLIN, 0}, {input_open && !pulled ? io.input_fd : -1, POLLIN, 0}};
        ::poll(p, input_open && !pulled ? 2 : 1, pull_now ? 0 : 250);
        if (tty && io.resized) {
            if (auto size = io.resized()) {
                (void)send_resize(*size);
            }
        }
        if (pull_now) {
            auto n = io.produce(frame.data() + 1, frame.size() - 1);
            if (!n) {
                return tl::unexpected(n.error());
            }
            if (*n == 0) {
                close_input();
            } else {
                frame[0] = k_stdin;
                if (auto ok = socket.send(net::ws_op::binary, std::string_view(frame.data(), *n + 1)); !ok) {
                    return tl::unexpected(ok.error());
                }
            }
        } else if (input_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            const ssize_t n = ::read(io.input_fd, frame.data() + 1, frame.size() - 1);
            if (n > 0) {
                frame[0] = k_stdin;
                if (auto ok = socket.send(net::ws_op::binary,
                                          std::string_view(frame.data(), static_cast<std::size_t>(n) + 1));
                    !ok) {
                    return tl::unexpected(ok.error());
                }
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                close_input();
            }
        }
        messages.clear();
        auto open = socket.receive(messages);
        if (!open) {
            return tl::unexpected(open.error());
        }
        for (const auto& m : messages) {
            if (m.opcode == net::ws_op::close) {
                if (!exit_code) {
                    return fail(ErrorKind::unavailable, who + ": the server closed the stream before the command's "
                                                              "exit status");
                }
                return *exit_code;
            }
            if (m.payload.empty()) {
                continue;
            }
            const std::string_view data = std::string_view(m.payload).substr(1);
            switch (m.payload[0]) {
            case k_stdout:
                if (io.out && !data.empty()) {
                    io.out(data);
                }
                break;
            case k_stderr:
                if (io.err && !data.empty()) {
                    io.err(data);
                }
                break;
            case k_error: {
                auto code = exit_code_of(data, who);
                if (!code) {
                    return tl::unexpected(code.error());
                }
                exit_code = *code;
                break;
            }
            default:
                break;
            }
        }
        if (!*open) {
            if (!exit_code) {
                return fail(ErrorKind::unavailable, who + ": the connection ended before the command's exit status");
            }
            return *exit_code;
        }
        if (exit_code && pull_now) {
            return *exit_code; // the command ended before taking all its input (it failed, or did not want it)
        }
    }
}

} // namespace tandem::k8s
