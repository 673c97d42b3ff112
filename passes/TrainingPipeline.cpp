//===- TrainingPipeline.cpp - The rn-training-pipeline ----------------------===//
//
// Everything between the model and the capture program, in order:
// rn-build-training, rn-fuse-cbr, rn-recompute-relu-mask,
// rn-pad-conv-channels, rn-fold-gradient-adds, (rn-fuse-bn-prologue,)
// rn-partition, (rn-bucket-all-reduce,) rn-group-updates,
// rn-group-elementwise, rn-plan-memory, rn-assign-streams,
// rn-insert-barriers, rn-verify-schedule.
//
// The pipeline takes every option of every pass it runs, by the name and
// with the default the pass declares in Passes.td: nothing is re-declared
// here, so a new pass option reaches rn-compile --pipeline by itself. An
// option several passes declare (`report`, `min-tensors`) sets it in each.
// Four options keep the pipeline names they had before the passes declared
// them (kAliases). The pipeline's own options are the switches that turn a
// stage off or on (TrainingPipelineSwitches).
//
//===----------------------------------------------------------------------===//

#include "passes/TrainingPipeline.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace mlir;
using namespace mlir::rn;

namespace {
/// MLIR keeps a pass's option objects to itself (Pass::passOptions,
/// PassOptions::options and OptionBase::getOption are private or
/// protected), so their declared order, descriptions and value
/// descriptions have no accessor. An explicit instantiation may name
/// private members ([temp.spec.general]), which is how `declaredOptions`
/// reaches them: a renaming in MLIR fails to compile here.
template <typename Tag, auto Member> struct Expose {
  friend auto member(Tag) { return Member; }
};
struct PassOptionsOfPass {
  friend auto member(PassOptionsOfPass);
};
struct OptionsOfPassOptions {
  friend auto member(OptionsOfPassOptions);
};
struct ClOptionOfOption {
  friend auto member(ClOptionOfOption);
};
} // namespace

template struct Expose<PassOptionsOfPass, &Pass::passOptions>;
template struct Expose<OptionsOfPassOptions,
                       &mlir::detail::PassOptions::options>;
template struct Expose<ClOptionOfOption,
                       &mlir::detail::PassOptions::OptionBase::getOption>;

namespace {
/// The options `options` declares, in their declaration order.
SmallVector<const llvm::cl::Option *>
declaredOptions(const mlir::detail::PassOptions &options) {
  SmallVector<const llvm::cl::Option *> declared;
  for (auto *option : options.*member(OptionsOfPassOptions{}))
    declared.push_back((option->*member(ClOptionOfOption{}))());
  return declared;
}

SmallVector<const llvm::cl::Option *> declaredOptions(Pass &pass) {
  return declaredOptions(pass.*member(PassOptionsOfPass{}));
}

struct TrainingPipelineSwitches
    : public PassPipelineOptions<TrainingPipelineSwitches> {
  Option<bool> recomputeReluMask{
      *this, "recompute-relu-mask",
      llvm::cl::desc("run rn-recompute-relu-mask: the CBR backward's ReLU "
                     "mask from the convolution output"),
      llvm::cl::init(true)};
  Option<bool> foldGradientAdds{
      *this, "fold-gradient-adds",
      llvm::cl::desc("run rn-fold-gradient-adds: residual junctions' "
                     "gradient sums in the data gradient's epilogue"),
      llvm::cl::init(true)};
  Option<bool> fuseBnPrologue{
      *this, "fuse-bn-prologue",
      llvm::cl::desc("run rn-fuse-bn-prologue: f16 CBRs' batch norm apply + "
                     "ReLU in the prologue of the convolutions that read "
                     "them"),
      llvm::cl::init(false)};
  Option<bool> groupUpdates{
      *this, "group-updates",
      llvm::cl::desc("run rn-group-updates: multi-tensor optimizer updates"),
      llvm::cl::init(true)};
  Option<bool> groupElementwise{
      *this, "group-elementwise",
      llvm::cl::desc("run rn-group-elementwise: multi-tensor gradient "
                     "zeroing, unscaling and casts"),
      llvm::cl::init(true)};
  Option<bool> verify{*this, "verify",
                      llvm::cl::desc("run rn-verify-schedule: prove the "
                                     "schedule at the end"),
                      llvm::cl::init(true)};
};

/// Pipeline names that differ from the pass option they set. They predate
/// the forwarding of pass options and are in scripts and docs; the pass's
/// own name (e.g. rn-fuse-cbr's `enable`) would be unclear in the pipeline.
struct Alias {
  llvm::StringLiteral name, pass, passOption;
};
constexpr Alias kAliases[] = {
    {"fuse", "rn-fuse-cbr", "enable"},
    {"pad-conv-channels", "rn-pad-conv-channels", "channel-multiple"},
    {"fold-gradient-adds-max-stride", "rn-fold-gradient-adds", "max-stride"},
    {"all-reduce-bucket-bytes", "rn-bucket-all-reduce", "bucket-bytes"},
};

const Alias *aliasOfPassOption(StringRef pass, StringRef option) {
  for (const Alias &alias : kAliases)
    if (alias.pass == pass && alias.passOption == option)
      return &alias;
  return nullptr;
}

/// Splits an option string ("a=1 b=\"x y\" c={1,2}") at the spaces outside
/// quotes and braces.
SmallVector<StringRef> splitOptions(StringRef text) {
  SmallVector<StringRef> tokens;
  size_t start = 0;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ' ';
    if (c == '"')
      quoted = !quoted;
    else if (!quoted && c == '{')
      ++depth;
    else if (!quoted && c == '}')
      --depth;
    if (c == ' ' && !quoted && depth <= 0) {
      StringRef token = text.slice(start, i).trim();
      if (!token.empty())
        tokens.push_back(token);
      start = i + 1;
    }
  }
  return tokens;
}

/// An option's value as printed, with the quotes around a string removed.
std::string unquoted(StringRef value) {
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
    value = value.drop_front().drop_back();
  return value.str();
}

/// The options of `text`, the form PassOptions::print writes: "{a=1 b=x}".
/// The options are in name order there; MLIR prints every option a pass
/// declares, set or not, which is how the pipeline learns them.
SmallVector<std::pair<std::string, std::string>>
parsePrintedOptions(StringRef text) {
  SmallVector<std::pair<std::string, std::string>> options;
  size_t open = text.find('{');
  if (open == StringRef::npos)
    return options;
  StringRef body = text.drop_front(open + 1);
  body = body.drop_back(body.ends_with("}") ? 1 : 0);
  for (StringRef token : splitOptions(body)) {
    auto [key, value] = token.split('=');
    options.emplace_back(key.str(), unquoted(value));
  }
  return options;
}

/// A pass's options with their current values, read back from its textual
/// form (MLIR has no public accessor for a pass's options).
SmallVector<std::pair<std::string, std::string>> optionValues(Pass &pass) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pass.printAsTextualPipeline(os);
  return parsePrintedOptions(text);
}

std::string optionValue(Pass &pass, StringRef name) {
  for (auto &[key, value] : optionValues(pass))
    if (key == name)
      return value;
  llvm_unreachable("the pipeline reads an option its pass does not declare");
}

bool isTrue(StringRef value) { return value == "true" || value == "1"; }

int64_t asInteger(StringRef value) {
  int64_t result = 0;
  return value.getAsInteger(10, result) ? 0 : result;
}

/// One pass of the pipeline, whether it runs and what it is handed.
struct Stage {
  std::unique_ptr<Pass> pass;
  /// Whether the stage runs, given the switches and the configured passes.
  std::function<bool(const TrainingPipelineSwitches &,
                     ArrayRef<Stage> stages)>
      runs;
  std::string options; ///< "name=value ..." for initializeOptions
};

bool always(const TrainingPipelineSwitches &, ArrayRef<Stage>) {
  return true;
}

Pass &stagePass(ArrayRef<Stage> stages, StringRef argument) {
  for (const Stage &stage : stages)
    if (stage.pass->getArgument() == argument)
      return *stage.pass;
  llvm_unreachable("no such stage");
}

/// The stages in order, each with its pass's defaults.
SmallVector<Stage> createStages() {
  using S = const TrainingPipelineSwitches &;
  using A = ArrayRef<Stage>;
  SmallVector<Stage> stages;
  auto add = [&](std::unique_ptr<Pass> pass, decltype(Stage::runs) runs) {
    stages.push_back(Stage{std::move(pass), std::move(runs), {}});
  };
  add(createBuildTraining(), always);
  add(createFuseCbr(), always);
  add(createRecomputeReluMask(), [](S s, A) -> bool { return s.recomputeReluMask; });
  add(createPadConvChannels(), [](S, A stages) {
    return asInteger(optionValue(stagePass(stages, "rn-pad-conv-channels"),
                                 "channel-multiple")) > 1;
  });
  add(createFoldGradientAdds(), [](S s, A) -> bool { return s.foldGradientAdds; });
  add(createFuseBnPrologue(), [](S s, A) -> bool { return s.fuseBnPrologue; });
  add(createPartition(), always);
  add(createBucketAllReduce(), [](S, A stages) {
    return isTrue(optionValue(stagePass(stages, "rn-build-training"),
                              "data-parallel")) &&
           asInteger(optionValue(stagePass(stages, "rn-bucket-all-reduce"),
                                 "bucket-bytes")) > 0;
  });
  add(createGroupUpdates(), [](S s, A) -> bool { return s.groupUpdates; });
  add(createGroupElementwise(), [](S s, A) -> bool { return s.groupElementwise; });
  add(createPlanMemory(), always);
  add(createAssignStreams(), always);
  add(createInsertBarriers(), always);
  add(createVerifySchedule(), [](S s, A) -> bool { return s.verify; });
  return stages;
}

SmallVector<std::pair<std::string, std::string>>
switchDefaults(const TrainingPipelineSwitches &switches) {
  std::string text;
  llvm::raw_string_ostream os(text);
  switches.print(os);
  return parsePrintedOptions(text);
}

/// The name under which the pipeline takes `option` of `pass`.
std::string pipelineName(StringRef pass, StringRef option) {
  const Alias *alias = aliasOfPassOption(pass, option);
  return alias ? alias->name.str() : option.str();
}

LogicalResult
buildPipeline(OpPassManager &pm, StringRef optionText,
              function_ref<LogicalResult(const Twine &)> errorHandler) {
  TrainingPipelineSwitches switches;
  SmallVector<Stage> stages = createStages();
  llvm::StringMap<bool> switchNames;
  for (auto &entry : switchDefaults(switches))
    switchNames[entry.first] = true;
  // Which stages take each name, and under which of their option names.
  llvm::StringMap<SmallVector<std::pair<Stage *, std::string>>> takers;
  for (Stage &stage : stages)
    for (auto &entry : optionValues(*stage.pass))
      takers[pipelineName(stage.pass->getArgument(), entry.first)]
          .emplace_back(&stage, entry.first);

  std::string switchText;
  for (StringRef token : splitOptions(optionText)) {
    auto [name, value] = token.split('=');
    if (switchNames.count(name)) {
      switchText += token.str() + " ";
      continue;
    }
    auto found = takers.find(name);
    if (found == takers.end()) {
      for (const Alias &alias : kAliases)
        if (alias.passOption == name)
          return errorHandler("rn-training-pipeline takes " + alias.pass +
                              "'s option '" + name + "' as '" + alias.name +
                              "'");
      return errorHandler("rn-training-pipeline has no option '" + name +
                          "' (rn-compile --pipeline-help lists them)");
    }
    for (auto &[stage, passOption] : found->second)
      stage->options += passOption + "=" + value.str() + " ";
  }
  if (failed(switches.parseFromString(switchText)))
    return errorHandler("bad rn-training-pipeline switch in '" +
                        StringRef(switchText).trim() +
                        "'");
  for (Stage &stage : stages)
    if (!stage.options.empty() &&
        failed(stage.pass->initializeOptions(stage.options, errorHandler)))
      return failure();
  // Decide every stage before moving any pass out of the list: conditions
  // read the other stages' options.
  SmallVector<bool> runs;
  for (Stage &stage : stages)
    runs.push_back(stage.runs(switches, stages));
  for (auto [stage, run] : llvm::zip(stages, runs))
    if (run)
      pm.addPass(std::move(stage.pass));
  return success();
}
} // namespace

namespace {
/// `option` described, with `printed` its default as MLIR prints it.
PipelineOption describe(const llvm::cl::Option &option, StringRef pass,
                        StringRef printed) {
  PipelineOption out;
  out.name = pipelineName(pass, option.ArgStr);
  out.defaultValue = printed.str();
  out.pass = pass.str();
  out.passOption = option.ArgStr.str();
  out.help = option.HelpStr.str();
  // The type as MLIR's printing tells it: a bool is the option that needs
  // no value (llvm::cl's parser<bool>), raw_ostream prints an integer as
  // digits and a double with an exponent (9.000000e-01).
  int64_t integer = 0;
  double number = 0;
  if (option.getValueExpectedFlag() == llvm::cl::ValueOptional)
    out.type = "bool";
  else if (!printed.getAsInteger(10, integer))
    out.type = "int";
  else if (printed.contains_insensitive("e") && !printed.getAsDouble(number))
    out.type = "float";
  else
    out.type = "string";
  if (option.ValueStr.contains('|')) {
    SmallVector<StringRef> choices;
    option.ValueStr.split(choices, '|');
    for (StringRef choice : choices)
      out.choices.push_back(choice.str());
  }
  return out;
}
} // namespace

std::vector<PipelineOption> mlir::rn::trainingPipelineOptions() {
  std::vector<PipelineOption> options;
  auto add = [&](ArrayRef<const llvm::cl::Option *> declared, StringRef pass,
                 ArrayRef<std::pair<std::string, std::string>> printed) {
    for (const llvm::cl::Option *option : declared)
      for (auto &[name, value] : printed)
        if (name == option->ArgStr)
          options.push_back(describe(*option, pass, value));
  };
  TrainingPipelineSwitches switches;
  add(declaredOptions(switches), "", switchDefaults(switches));
  for (Stage &stage : createStages())
    add(declaredOptions(*stage.pass), stage.pass->getArgument(),
        optionValues(*stage.pass));
  return options;
}

void mlir::rn::printTrainingPipelineHelp() {
  llvm::raw_ostream &os = llvm::outs();
  os << "rn-training-pipeline options (rn-compile --pipeline \"name=value "
        "...\"):\n"
     << "every option of every pass the pipeline runs, by the pass's name "
        "and with its default;\nan option several passes declare sets it in "
        "each. Renamed in the pipeline:\n";
  for (const Alias &alias : kAliases)
    os << "  " << alias.name << " = " << alias.pass << "'s "
       << alias.passOption << "\n";
  os << "\nThe pipeline's switches (which stages run):\n";
  TrainingPipelineSwitches switches;
  switches.printHelp(/*indent=*/2, /*descIndent=*/36);
  os << "\nDefaults: ";
  switches.print(os);
  os << "\n";
  for (Stage &stage : createStages()) {
    os << "\ndefaults: ";
    stage.pass->printAsTextualPipeline(os);
    os << "\n";
    if (const PassInfo *info = PassInfo::lookup(stage.pass->getArgument()))
      info->printHelpStr(/*indent=*/2, /*descIndent=*/36);
  }
  os.flush();
}

void mlir::rn::registerTrainingPipeline() {
  registerPassPipeline(
      "rn-training-pipeline",
      "Model -> scheduled training step: build-training, fuse-cbr, "
      "recompute-relu-mask, pad-conv-channels, fold-gradient-adds, "
      "fuse-bn-prologue (off by default), partition, bucket-all-reduce "
      "(data-parallel), group-updates, group-elementwise, plan-memory, "
      "assign-streams, insert-barriers, verify-schedule. Takes every option "
      "of these passes (rn-compile --pipeline-help lists them) and the "
      "switches below",
      buildPipeline,
      [](function_ref<void(const mlir::detail::PassOptions &)> handler) {
        handler(TrainingPipelineSwitches());
      });
}
