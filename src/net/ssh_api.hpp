#pragma once
// libssh2, loaded on first use (like libcurl, net/curl_api.hpp). Linking it would make every tandem
// process load libssh2 and libcrypto at start (~4 ms), which only Slurm-over-SSH clusters need. Only the
// headers are used at build time: each entry's type is the header's own declaration, so a signature can
// never drift from the library's. Macros of libssh2.h (libssh2_channel_read, ...) name functions that are
// not here: call the `_ex` entry they expand to.

#include <string>

#include <libssh2.h>
#include <libssh2_sftp.h>

namespace tandem::net {

// Every libssh2 entry point tandem calls, without the `libssh2_` prefix.
#define TANDEM_LIBSSH2_FUNCTIONS(X)                                                                          \
    X(init)                                                                                                  \
    X(version)                                                                                               \
    X(free)                                                                                                  \
    X(session_init_ex)                                                                                       \
    X(session_callback_set)                                                                                  \
    X(session_set_blocking)                                                                                  \
    X(session_handshake)                                                                                     \
    X(session_disconnect_ex)                                                                                 \
    X(session_free)                                                                                          \
    X(session_last_error)                                                                                    \
    X(session_last_errno)                                                                                    \
    X(session_block_directions)                                                                              \
    X(session_hostkey)                                                                                       \
    X(session_supported_algs)                                                                                \
    X(session_method_pref)                                                                                   \
    X(hostkey_hash)                                                                                          \
    X(knownhost_init)                                                                                        \
    X(knownhost_free)                                                                                        \
    X(knownhost_readline)                                                                                    \
    X(knownhost_checkp)                                                                                      \
    X(userauth_list)                                                                                         \
    X(userauth_authenticated)                                                                                \
    X(userauth_publickey_fromfile_ex)                                                                        \
    X(agent_init)                                                                                            \
    X(agent_free)                                                                                            \
    X(agent_connect)                                                                                         \
    X(agent_disconnect)                                                                                      \
    X(agent_set_identity_path)                                                                               \
    X(agent_list_identities)                                                                                 \
    X(agent_get_identity)                                                                                    \
    X(agent_userauth)                                                                                        \
    X(channel_open_ex)                                                                                       \
    X(channel_direct_tcpip_ex)                                                                               \
    X(channel_process_startup)                                                                               \
    X(channel_request_pty_ex)                                                                                \
    X(channel_request_pty_size_ex)                                                                           \
    X(channel_read_ex)                                                                                       \
    X(channel_write_ex)                                                                                      \
    X(channel_send_eof)                                                                                      \
    X(channel_eof)                                                                                           \
    X(poll_channel_read)                                                                                     \
    X(channel_close)                                                                                         \
    X(channel_wait_closed)                                                                                   \
    X(channel_get_exit_status)                                                                               \
    X(channel_get_exit_signal)                                                                               \
    X(channel_free)                                                                                          \
    X(sftp_init)                                                                                             \
    X(sftp_shutdown)                                                                                         \
    X(sftp_last_error)                                                                                       \
    X(sftp_open_ex)                                                                                          \
    X(sftp_close_handle)                                                                                     \
    X(sftp_seek64)                                                                                           \
    X(sftp_read)                                                                                             \
    X(sftp_write)                                                                                            \
    X(sftp_fstat_ex)                                                                                         \
    X(sftp_stat_ex)                                                                                          \
    X(sftp_mkdir_ex)

struct Libssh2Api {
#define TANDEM_LIBSSH2_FIELD(name) decltype(&::libssh2_##name) name;
    TANDEM_LIBSSH2_FUNCTIONS(TANDEM_LIBSSH2_FIELD)
#undef TANDEM_LIBSSH2_FIELD
};

// Loads libssh2.so.1 and runs libssh2_init once; nullptr when it cannot be loaded, with a one-line reason
// naming the package (libssh2-1) in `error`.
const Libssh2Api* load_libssh2(std::string* error = nullptr);
// The loaded API; only for code that runs after load_libssh2() succeeded (every SshSession does).
const Libssh2Api& libssh2();

} // namespace tandem::net
