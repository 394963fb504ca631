//===- EmbedGPUBinaries.cpp - compiled GPU kernels as step constants ------===//
//
// gpu.binary @k [#gpu.object<..., bin = "...">]  ==>  the bytes of @k_image,
// which the step hands to titan_rt_launch_generated.
//
//===----------------------------------------------------------------------===//

#include "titan/Conversion/KernelToRuntimeCalls/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace titan {
#define GEN_PASS_DEF_KERNELEMBEDGPUBINARIES
#include "titan/Conversion/KernelToRuntimeCalls/Passes.h.inc"
} // namespace titan

using namespace mlir;

namespace {

struct KernelEmbedGPUBinariesPass
    : titan::impl::KernelEmbedGPUBinariesBase<KernelEmbedGPUBinariesPass> {
  LogicalResult embed(gpu::BinaryOp binary) {
    ModuleOp module = getOperation();
    std::string imageName = (binary.getSymName() + "_image").str();
    auto image = module.lookupSymbol<LLVM::GlobalOp>(imageName);
    if (!image)
      return binary.emitOpError()
             << "has no global @" << imageName
             << " to hold it (kernel-to-runtime-calls declares it)";
    auto object = binary.getObjects().empty()
                      ? gpu::ObjectAttr()
                      : dyn_cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    if (!object)
      return binary.emitOpError() << "has no compiled object";
    // NUL-terminated, so that PTX text (format isa) loads too.
    std::string bytes = object.getObject().getValue().str();
    bytes.push_back('\0');
    OpBuilder b(image);
    LLVM::GlobalOp::create(
        b, image.getLoc(),
        LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size()),
        /*isConstant=*/true, LLVM::Linkage::Private, imageName,
        b.getStringAttr(bytes), /*alignment=*/256);
    image.erase();
    binary.erase();
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto binary :
         llvm::make_early_inc_range(module.getOps<gpu::BinaryOp>()))
      if (failed(embed(binary)))
        return signalPassFailure();
    if (module.getOps<gpu::GPUModuleOp>().empty())
      module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace
