#include <uwjit/engine/disassemble.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/compiler.hpp>

#include "llvm.hpp"

#include <iterator>
#include <map>

namespace uwjit::engine {

namespace {

// "name" or "name+0x10" for `address`: the nearest label at or before it.
std::string symbolic(const std::map<std::uint64_t, std::string>& labels, std::uint64_t address) {
  auto after = labels.upper_bound(address);
  if (after == labels.begin()) {
    return "";
  }
  const auto& [start, name] = *std::prev(after);
  std::string text;
  llvm::raw_string_ostream out(text);
  out << name;
  if (address != start) {
    out << "+" << llvm::format_hex(address - start, 0);
  }
  out.flush();
  return text;
}

// A relocated place: the symbol it refers to (a section's name for a section symbol), the
// addend and the relocation's type.
struct Relocated {
  std::uint64_t offset = 0;
  std::string symbol;
  std::int64_t addend = 0;
  std::uint64_t type = 0;
};

Relocated read_relocation(const llvm::object::RelocationRef& relocation) {
  Relocated out{relocation.getOffset(), "", 0, relocation.getType()};
  const auto symbol = relocation.getSymbol();
  if (symbol != relocation.getObject()->symbol_end()) {
    auto symbol_name = symbol->getName();
    if (symbol_name && !symbol_name->empty()) {
      out.symbol = symbol_name->str();
    } else {
      llvm::consumeError(symbol_name.takeError());
      auto section = symbol->getSection();
      if (section && *section != relocation.getObject()->section_end()) {
        auto section_name = (*section)->getName();
        if (section_name) {
          out.symbol = section_name->str();
        } else {
          llvm::consumeError(section_name.takeError());
        }
      } else {
        llvm::consumeError(section.takeError());
      }
    }
  }
  if (out.symbol.empty()) {
    out.symbol = "?";
  }
  if (llvm::isa<llvm::object::ELFObjectFileBase>(relocation.getObject())) {
    auto addend = llvm::object::ELFRelocationRef(relocation).getAddend();
    if (addend) {
      out.addend = *addend;
    } else {
      llvm::consumeError(addend.takeError());
    }
  }
  return out;
}

// "symbol", "symbol+0x8", "symbol@GOTPCREL": what the instruction at [start, end) refers to
// through `relocated`. An x86 PC-relative field counts from the end of the instruction, and its
// addend says so (-4 for a displacement that ends the instruction): that part is taken off, so
// that the name is the target itself.
std::string relocation_text(const Relocated& relocated, std::uint64_t end, bool x86) {
  std::int64_t addend = relocated.addend;
  std::string suffix;
  if (x86) {
    switch (relocated.type) {
    case llvm::ELF::R_X86_64_GOTPCREL:
    case llvm::ELF::R_X86_64_GOTPCRELX:
    case llvm::ELF::R_X86_64_REX_GOTPCRELX:
      suffix = "@GOTPCREL";
      [[fallthrough]];
    case llvm::ELF::R_X86_64_PC32:
    case llvm::ELF::R_X86_64_PLT32:
      addend += static_cast<std::int64_t>(end - relocated.offset);
      break;
    default:
      break;
    }
  }
  std::string text;
  llvm::raw_string_ostream out(text);
  out << relocated.symbol << suffix;
  if (addend != 0) {
    out << (addend < 0 ? "-" : "+")
        << llvm::format_hex(static_cast<std::uint64_t>(addend < 0 ? -addend : addend), 0);
  }
  out.flush();
  return text;
}

} // namespace

std::string disassemble(std::span<const char> object) {
  detail::initialise_native_target();
  const TargetInfo& target = host_target();
  auto parsed = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(object.data(), object.size()), "kernel.o"));
  if (!parsed) {
    throw Error(ErrorKind::jit,
                "cannot read the object: " + detail::take_message(parsed.takeError()));
  }
  std::string lookup_error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(target.triple, lookup_error);
  if (llvm_target == nullptr) {
    throw Error(ErrorKind::internal, "no LLVM target for " + target.triple + ": " + lookup_error);
  }
  std::string features;
  for (const auto& feature : target.features) {
    features += features.empty() ? "" : ",";
    features += feature;
  }
  const llvm::Triple triple(target.triple);
  const llvm::MCTargetOptions mc_options;
  std::unique_ptr<llvm::MCRegisterInfo> registers(llvm_target->createMCRegInfo(target.triple));
  std::unique_ptr<llvm::MCAsmInfo> asm_info(
      llvm_target->createMCAsmInfo(*registers, target.triple, mc_options));
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      llvm_target->createMCSubtargetInfo(target.triple, target.cpu, features));
  std::unique_ptr<llvm::MCInstrInfo> instructions(llvm_target->createMCInstrInfo());
  llvm::MCContext context(triple, asm_info.get(), registers.get(), subtarget.get());
  std::unique_ptr<llvm::MCDisassembler> disassembler(
      llvm_target->createMCDisassembler(*subtarget, context));
  std::unique_ptr<llvm::MCInstPrinter> printer(llvm_target->createMCInstPrinter(
      triple, asm_info->getAssemblerDialect(), *asm_info, *instructions, *registers));
  if (!disassembler || !printer) {
    throw Error(ErrorKind::internal, "LLVM has no disassembler for " + target.triple);
  }
  // Jump and call targets as addresses (offsets in the section), named below where known.
  printer->setPrintBranchImmAsAddress(true);
  std::unique_ptr<llvm::MCInstrAnalysis> analysis(
      llvm_target->createMCInstrAnalysis(instructions.get()));

  std::string text;
  llvm::raw_string_ostream out(text);
  for (const llvm::object::SectionRef& section : (*parsed)->sections()) {
    if (!section.isText() || section.getSize() == 0) {
      continue;
    }
    auto contents = section.getContents();
    auto name = section.getName();
    if (!contents || !name) {
      llvm::consumeError(contents.takeError());
      llvm::consumeError(name.takeError());
      continue;
    }
    // Function labels by offset within this section.
    std::map<std::uint64_t, std::string> labels;
    for (const llvm::object::SymbolRef& symbol : (*parsed)->symbols()) {
      auto in_section = symbol.getSection();
      auto symbol_name = symbol.getName();
      auto address = symbol.getValue();
      if (in_section && symbol_name && address && *in_section == section && !symbol_name->empty()) {
        labels[*address] = symbol_name->str();
      } else {
        llvm::consumeError(in_section.takeError());
        llvm::consumeError(symbol_name.takeError());
        llvm::consumeError(address.takeError());
      }
    }
    // What each relocated place refers to (calls to other functions, constants in other
    // sections): the object does not know those addresses yet, only the symbols.
    std::map<std::uint64_t, Relocated> relocations;
    for (const llvm::object::SectionRef& other : (*parsed)->sections()) {
      auto target_section = other.getRelocatedSection();
      if (!target_section) {
        llvm::consumeError(target_section.takeError());
        continue;
      }
      if (*target_section != section) {
        continue;
      }
      for (const llvm::object::RelocationRef& relocation : other.relocations()) {
        relocations[relocation.getOffset()] = read_relocation(relocation);
      }
    }
    out << "section " << *name << " (" << section.getSize() << " bytes)\n";
    const auto bytes = llvm::arrayRefFromStringRef(*contents);
    std::uint64_t offset = 0;
    while (offset < bytes.size()) {
      if (const auto label = labels.find(offset); label != labels.end()) {
        out << "\n" << label->second << ":\n";
      }
      llvm::MCInst instruction;
      std::uint64_t size = 0;
      const auto status = disassembler->getInstruction(instruction, size, bytes.slice(offset),
                                                       offset, llvm::nulls());
      out << llvm::format_hex_no_prefix(offset, 6) << ":";
      if (status != llvm::MCDisassembler::Success || size == 0) {
        out << "\t.byte " << llvm::format_hex(bytes[offset], 4) << "\n";
        offset += 1;
        continue;
      }
      // x86's printer counts a relative target from the end of the instruction, others from its
      // start (as llvm-objdump does).
      std::string printed;
      llvm::raw_string_ostream printed_out(printed);
      printer->printInst(&instruction, triple.isX86() ? offset + size : offset, "", *subtarget,
                         printed_out);
      printed_out.flush();
      const bool branch =
          analysis && (analysis->isBranch(instruction) || analysis->isCall(instruction));
      if (const auto relocated = relocations.lower_bound(offset);
          relocated != relocations.end() && relocated->first < offset + size) {
        // A call to another function, or a constant elsewhere: its address is not known before
        // linking, its name is. A branch shows the name in place of the placeholder address.
        const std::string target_text =
            relocation_text(relocated->second, offset + size, triple.isX86());
        if (branch) {
          printed = printed.substr(0, printed.rfind('\t') + 1) + "<" + target_text + ">";
        } else {
          printed += "\t# " + target_text;
        }
      } else if (std::uint64_t branch_target = 0;
                 analysis && analysis->evaluateBranch(instruction, offset, size, branch_target)) {
        if (const auto where = symbolic(labels, branch_target); !where.empty()) {
          printed += " <" + where + ">";
        }
      }
      out << printed;
      out << "\n";
      offset += size;
    }
  }
  out.flush();
  return text;
}

} // namespace uwjit::engine
