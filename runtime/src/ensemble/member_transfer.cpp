// Members in bytes, and their way to rank 0.
#include "member_transfer.hpp"

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <charconv>

namespace uwjit::runtime::detail {

namespace {

constexpr int k_members_tag = 0x454e53; // "ENS"

} // namespace

void put_doubles(ByteWriter& out, const std::vector<double>& values) {
  out.u64(values.size());
  for (const double v : values) {
    out.f64(v);
  }
}

std::vector<double> get_doubles(ByteReader& in) {
  std::vector<double> values(static_cast<std::size_t>(in.count(8)));
  for (auto& v : values) {
    v = in.f64();
  }
  return values;
}

std::string encode_members(const std::vector<MemberResult>& members) {
  ByteWriter out;
  out.u64(members.size());
  for (const auto& m : members) {
    out.i64(m.id);
    put_doubles(out, m.values);
    out.i64(m.steps);
    out.u8(static_cast<std::uint8_t>(m.status));
    out.str(m.reason);
    put_doubles(out, m.integrals);
    out.u64(m.fields.size());
    for (const auto& f : m.fields) {
      out.str(f.name);
      out.u8(static_cast<std::uint8_t>(f.dtype));
      out.u64(f.shape.size());
      for (const auto n : f.shape) {
        out.i64(n);
      }
      out.u64(f.data.size());
      out.raw(f.data.data(), f.data.size());
    }
  }
  return std::move(out.bytes());
}

std::vector<MemberResult> decode_members(std::string_view bytes, const std::string& what) {
  ByteReader in(bytes, what);
  // A member takes at least 45 bytes: id, values, steps, status, reason, integrals, fields.
  std::vector<MemberResult> members(static_cast<std::size_t>(in.count(45)));
  for (auto& m : members) {
    m.id = in.i64();
    m.values = get_doubles(in);
    m.steps = in.i64();
    const auto status = in.u8();
    if (status > static_cast<std::uint8_t>(MemberStatus::failed)) {
      in.fail("a status out of range");
    }
    m.status = static_cast<MemberStatus>(status);
    m.reason = in.str();
    m.integrals = get_doubles(in);
    // A field takes at least 21 bytes: name, dtype, shape, data.
    m.fields.resize(static_cast<std::size_t>(in.count(21)));
    for (auto& f : m.fields) {
      f.name = in.str();
      f.dtype = static_cast<codegen::Dtype>(in.u8());
      if (!codegen::is_supported(f.dtype)) {
        in.fail(format("member {}: field {} of an unknown dtype (code {})", m.id, printable(f.name),
                       static_cast<int>(f.dtype)));
      }
      f.shape.resize(static_cast<std::size_t>(in.count(8)));
      for (auto& n : f.shape) {
        n = in.i64();
      }
      const auto raw = in.raw(in.u64());
      const auto* first = reinterpret_cast<const std::byte*>(raw.data());
      f.data.assign(first, first + raw.size());
    }
  }
  if (!in.at_end()) {
    in.fail("bytes after the last member");
  }
  return members;
}

std::vector<std::string> gather_to_root(comm::Comm& comm, const std::string& mine) {
  const auto sizes = comm.all_gather(std::to_string(mine.size()));
  std::vector<std::string> all;
  if (comm.rank() != 0) {
    if (!mine.empty()) {
      comm.start_send(std::as_bytes(std::span(mine.data(), mine.size())), 0, k_members_tag)->wait();
    }
    return all;
  }
  all.resize(sizes.size());
  all[0] = mine;
  for (std::size_t r = 1; r < sizes.size(); ++r) {
    std::size_t size = 0;
    std::from_chars(sizes[r].data(), sizes[r].data() + sizes[r].size(), size);
    if (size == 0) {
      continue;
    }
    all[r].resize(size);
    comm.start_receive(std::as_writable_bytes(std::span(all[r].data(), size)), static_cast<int>(r),
                       k_members_tag)
        ->wait();
  }
  return all;
}

} // namespace uwjit::runtime::detail
