// Members in bytes: what the ranks of an ensemble send to rank 0, whose sinks take them.
#pragma once

#include <uwjit/comm/comm.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/runtime/member_sink.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime::detail {

/// A list of doubles: its length, then each (what encode_members and a checkpoint write).
void put_doubles(ByteWriter& out, const std::vector<double>& values);
/// What put_doubles wrote.
[[nodiscard]] std::vector<double> get_doubles(ByteReader& in);
/// `members` as bytes (little-endian, every field of each MemberResult).
[[nodiscard]] std::string encode_members(const std::vector<MemberResult>& members);
/// What encode_members wrote; Error(io) "WHAT: ..." for bytes it did not write.
[[nodiscard]] std::vector<MemberResult> decode_members(std::string_view bytes,
                                                       const std::string& what);
/// Collective: every rank's `mine`, on rank 0 in rank order (empty elsewhere). Point-to-point: a
/// rank sends to rank 0 only when it has bytes; the sizes travel in one all-gather.
[[nodiscard]] std::vector<std::string> gather_to_root(comm::Comm& comm, const std::string& mine);

} // namespace uwjit::runtime::detail
