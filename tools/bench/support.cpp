#include "bench.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace uwjit::bench {

double ms_since(Clock::time_point start) {
  return ms_between(start, Clock::now());
}

double ms_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

std::int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string Options::command(const std::string& args) const {
  std::string text = self + " " + args;
  if (quick) {
    text += " --quick";
  } else {
    text += " --rounds " + std::to_string(rounds);
  }
  return text;
}

Summary summarise(std::vector<double> values) {
  Summary summary;
  summary.n = values.size();
  if (values.empty()) {
    summary.median = summary.min = summary.max = std::nan("");
    return summary;
  }
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  summary.median = values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  summary.min = values.front();
  summary.max = values.back();
  return summary;
}

namespace {
Json finite(double value) {
  return std::isfinite(value) ? Json(value) : Json(nullptr);
}
} // namespace

double max_of(const Json& list) {
  double worst = 0;
  for (const auto& v : list) {
    worst = std::max(worst, v.get<double>());
  }
  return worst;
}

double sum_of(const Json& list) {
  double total = 0;
  for (const auto& v : list) {
    total += v.get<double>();
  }
  return total;
}

Json to_json(const Summary& summary) {
  return {{"median", finite(summary.median)},
          {"min", finite(summary.min)},
          {"max", finite(summary.max)},
          {"n", summary.n}};
}

const std::vector<double>& Series::values(const std::string& name) const {
  static const std::vector<double> none;
  const auto it = m_values.find(name);
  return it == m_values.end() ? none : it->second;
}

Json Series::to_json() const {
  Json out = Json::object();
  for (const auto& [name, values] : m_values) {
    Json entry = bench::to_json(summarise(values));
    Json list = Json::array();
    for (const double v : values) {
      list.push_back(finite(v));
    }
    entry["values"] = std::move(list);
    out[name] = std::move(entry);
  }
  return out;
}

std::string number_text(double value) {
  if (!std::isfinite(value)) {
    return "–";
  }
  const double magnitude = std::fabs(value);
  int decimals = 0;
  if (magnitude < 1) {
    decimals = 3;
  } else if (magnitude < 10) {
    decimals = 2;
  } else if (magnitude < 100) {
    decimals = 1;
  }
  if (magnitude != 0 && magnitude < 0.01) {
    decimals = 4;
  }
  char buffer[64];
  const auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, decimals);
  return ec == std::errc{} ? std::string(buffer, end) : std::string("?");
}

std::filesystem::path fresh_dir(const std::filesystem::path& parent, const std::string& stem) {
  static std::atomic<int> counter{0};
  std::filesystem::create_directories(parent);
  while (true) {
    auto path = parent / (stem + "." + std::to_string(counter++));
    if (std::filesystem::create_directory(path)) {
      return path;
    }
  }
}

std::string helper(const Options& options, const std::string& name) {
  return (options.bin_dir / name).string();
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find(',', start);
    const auto part =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) {
      parts.push_back(part);
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return parts;
}

long self_peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

long self_pss_kb() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Pss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}

// --- Process ------------------------------------------------------------------------------------

Json ProcessResult::json() const {
  // A whole JSON document (e.g. `uwjit run --json`, pretty-printed), possibly followed by
  // mpiexec's own messages: the text from the first line that opens an object to its closing
  // line.
  if (const auto open = out.find("{\n");
      open == 0 || (open != std::string::npos && out[open - 1] == '\n')) {
    if (const auto close = out.find("\n}\n", open); close != std::string::npos) {
      try {
        return Json::parse(out.substr(open, close + 2 - open + 1));
      } catch (const std::exception&) {
      }
    }
  }
  std::string_view text = out;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  const auto line_start = text.rfind('\n');
  const std::string_view line =
      line_start == std::string_view::npos ? text : text.substr(line_start + 1);
  try {
    return Json::parse(line);
  } catch (const std::exception&) {
    throw Error(ErrorKind::internal,
                format("a benchmark child printed no JSON (exit {}{}): {}", exit_code,
                       timed_out ? ", timed out" : "", err.empty() ? out : err));
  }
}

Process Process::start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw Error(ErrorKind::io, format("pipe: {}", std::strerror(errno)));
  }
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    const bool overridden = std::any_of(env.begin(), env.end(), [&](const std::string& o) {
      return o.substr(0, o.find('=')) == name;
    });
    if (!overridden) {
      environment.emplace_back(entry);
    }
  }
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : environment) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) {
    argp.push_back(a.data());
  }
  argp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // Its own process group, so that a time-out kills what it started too (e.g. mpiexec's ranks).
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  Process process;
  process.m_start_ns = monotonic_ns();
  const int status =
      ::posix_spawnp(&process.m_pid, argp[0], &actions, &attributes, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (status != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw Error(ErrorKind::io, format("cannot start {}: {}", argv[0], std::strerror(status)));
  }
  process.m_out = out_pipe[0];
  process.m_err = err_pipe[0];
  return process;
}

Process::Process(Process&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_out(std::exchange(other.m_out, -1)),
      m_err(std::exchange(other.m_err, -1)), m_start_ns(other.m_start_ns) {}

Process& Process::operator=(Process&& other) noexcept {
  std::swap(m_pid, other.m_pid);
  std::swap(m_out, other.m_out);
  std::swap(m_err, other.m_err);
  std::swap(m_start_ns, other.m_start_ns);
  return *this;
}

Process::~Process() {
  if (m_pid > 0) {
    (void)wait(std::chrono::milliseconds(0));
  }
}

ProcessResult Process::wait(std::chrono::milliseconds timeout) {
  ProcessResult result;
  const auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{m_out, POLLIN, 0}, {m_err, POLLIN, 0}};
  int open = 2;
  char buffer[65536];
  while (open > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      ::kill(-m_pid, SIGKILL);
      ::kill(m_pid, SIGKILL);
      break;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) {
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (auto& fd : fds) {
    if (fd.fd >= 0) {
      ::close(fd.fd);
    }
  }
  m_out = m_err = -1;
  int status = 0;
  while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.end_ns = monotonic_ns();
  result.start_ns = m_start_ns;
  result.wall_ms = static_cast<double>(result.end_ns - m_start_ns) / 1e6;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m_pid = -1;
  return result;
}

ProcessResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  std::chrono::milliseconds timeout) {
  return Process::start(argv, env).wait(timeout);
}

} // namespace uwjit::bench
