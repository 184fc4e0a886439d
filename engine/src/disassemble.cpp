#include <uwjit/engine/disassemble.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/compiler.hpp>

#include "llvm.hpp"

#include <map>

namespace uwjit::engine {

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
      printer->printInst(&instruction, offset, "", *subtarget, out);
      out << "\n";
      offset += size;
    }
  }
  out.flush();
  return text;
}

} // namespace uwjit::engine
