// Members that have left an ensemble (MemberResult), and the sinks they go to, tried in order:
// a bounded memory sink the host takes them from, and a file (HDF5) that users read with their
// own tools.
#pragma once

#include <uwjit/codegen/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uwjit::runtime {

/// Why a member left its ensemble.
enum class MemberStatus {
  converged, ///< every convergence rule held (StopRule::changes)
  step_cap,  ///< it reached the step cap first: not converged
  failed,    ///< its kernel failed or an integral stopped being finite
};
/// "converged", "step_cap" or "failed".
[[nodiscard]] std::string_view to_string(MemberStatus status) noexcept;

/// One state field of a member: its interior values, C order, components then domain axes.
struct MemberField {
  std::string name;
  codegen::Dtype dtype = codegen::Dtype::f64;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;
};

/// A member that has left its ensemble: who it was, how far it went, why it stopped, and its
/// last state and integrals (those after its last step; its state is the one its integrals
/// describe).
struct MemberResult {
  std::int64_t id = 0;        ///< its place in the sampler's order, from 0
  std::vector<double> values; ///< its values of the varied params (Ensemble::varied())
  std::int64_t steps = 0;     ///< the steps it took
  MemberStatus status = MemberStatus::step_cap;
  std::string reason;              ///< in words, e.g. "change of heat 3.1e-10 < 1e-09"
  std::vector<double> integrals;   ///< the node's integrals, in its layout's order
  std::vector<MemberField> fields; ///< its state fields (empty in a summary)
};

/// What every member of an ensemble holds, column by column: what a file sink lays out.
struct MemberColumns {
  std::vector<std::string> params;    ///< the varied params
  std::vector<std::string> integrals; ///< the node's integrals
  struct Field {
    std::string name;
    codegen::Dtype dtype = codegen::Dtype::f64;
    std::vector<std::int64_t> shape;
  };
  std::vector<Field> fields;
};

/// Where members go when they leave an ensemble. An ensemble offers each member to its sinks in
/// order and puts it in the first that is not full; when every sink is full the member waits in
/// the batch, no longer stepped, until one has room. Used by the ensemble's thread.
class MemberSink {
public:
  virtual ~MemberSink() = default;
  /// For reports: "memory (capacity 64)", "file out.h5".
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Called once, before any member runs, with the columns of every member and what describes
  /// the run (node type, rule, ...): a sink that cannot take them says so now (Error).
  virtual void begin(const MemberColumns& columns,
                     const std::vector<std::pair<std::string, std::string>>& attributes) = 0;
  /// Whether the sink has no room for one more member.
  [[nodiscard]] virtual bool full() const = 0;
  /// Takes a member (called only when !full()). What a sink has taken is kept (a file's is on
  /// disk when put returns).
  virtual void put(MemberResult&& member) = 0;
  /// The members taken so far.
  [[nodiscard]] virtual std::int64_t count() const = 0;
  /// Called once when the ensemble has drained (every member has left): a file is closed, so
  /// that others may open it. Nothing is put afterwards.
  virtual void end() {}
};

/// Members kept in memory, at most `capacity` at a time; the host takes them out (take()).
class MemorySink final : public MemberSink {
public:
  /// Error(usage) for a capacity of 0.
  explicit MemorySink(std::size_t capacity);
  [[nodiscard]] std::string describe() const override;
  void begin(const MemberColumns&,
             const std::vector<std::pair<std::string, std::string>>&) override {}
  [[nodiscard]] bool full() const override { return m_members.size() >= m_capacity; }
  void put(MemberResult&& member) override;
  [[nodiscard]] std::int64_t count() const override { return m_count; }
  /// The members held, in the order they came; the sink is then empty (room again).
  [[nodiscard]] std::vector<MemberResult> take();
  /// How many are held now.
  [[nodiscard]] std::size_t held() const noexcept { return m_members.size(); }

private:
  std::size_t m_capacity;
  std::vector<MemberResult> m_members;
  std::int64_t m_count = 0;
};

/// Members written to one HDF5 file (see docs/reference/file-formats.md): each field with the
/// member as the leading axis, the varied params, integrals, steps, status and ids, one row per
/// member in the order they left, the file flushed after each so that a killed run keeps every
/// member written. While it is open, HDF5's file lock keeps other processes from opening it
/// (h5py: `h5py.File(path, "r", locking=False)` reads it meanwhile); it is closed when the
/// ensemble drains (end()) or the sink goes. The path is checked when the sink is made, before any
/// member runs: it must not exist (nothing is ever overwritten) and its directory must.
/// Error(usage) otherwise, and in a build without HDF5 (UWJIT_HDF5=OFF).
class FileSink final : public MemberSink {
public:
  /// A new file (checked now: it must not exist) or, `append` (a resumed ensemble), the file a
  /// FileSink wrote before (checked when the sink begins: the same columns), whose members are
  /// not written again (put() skips an id the file holds: its row is the same member, bit for
  /// bit). `capacity`: the most members it takes (-1: no limit).
  enum class Open { create, append };
  explicit FileSink(std::filesystem::path path, std::int64_t capacity = -1,
                    Open open = Open::create);
  ~FileSink() override;
  [[nodiscard]] std::string describe() const override;
  void begin(const MemberColumns& columns,
             const std::vector<std::pair<std::string, std::string>>& attributes) override;
  [[nodiscard]] bool full() const override { return m_capacity >= 0 && m_count >= m_capacity; }
  void put(MemberResult&& member) override;
  [[nodiscard]] std::int64_t count() const override { return m_count; }
  /// Closes the file (HDF5 keeps others from opening it while it is open for writing).
  void end() override;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return m_path; }
  /// Whether this build can write HDF5 files.
  [[nodiscard]] static bool available() noexcept;

private:
  struct File;
  std::filesystem::path m_path;
  std::int64_t m_capacity;
  Open m_open;
  std::int64_t m_count = 0;
  std::unique_ptr<File> m_file;
};

} // namespace uwjit::runtime
