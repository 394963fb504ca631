//===- HFTokenizer.cpp - Hugging Face tokenizer.json ----------------------===//
//
// Reads what tokenizers' Tokenizer.from_file reads for a byte-level BPE
// (Llama 3's and GPT-2's tokenizer.json) and what TorchTitan v0.2.0's
// HuggingFaceTokenizer adds from tokenizer_config.json beside it: the BOS
// and EOS tokens and the special tokens it registers. Anything that would
// change the ids and is not implemented is refused, naming it.
//
//===----------------------------------------------------------------------===//

#include "BPE.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace titan::data;
using namespace titan::data::detail;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

namespace {

/// GPT-2's split regex: what tokenizers' ByteLevel pre-tokenizer applies
/// with use_regex true.
constexpr StringRef kGPT2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

llvm::Expected<json::Value> readJSON(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fileError(path, "cannot read: " + buffer.getError().message());
  auto value = json::parse((*buffer)->getBuffer());
  if (!value)
    return fileError(path, "malformed JSON " + toString(value.takeError()));
  return std::move(*value);
}

/// Reads one tokenizer.json into a BPEModel; errors name the file and the
/// JSON path of what is wrong.
class HFReader {
public:
  HFReader(StringRef path, BPEModel &model) : path(path), m(model) {}

  llvm::Error read(const json::Object &root);
  /// tokenizer_config.json, read after tokenizer.json.
  llvm::Error readConfig(StringRef configPath, const json::Object &config);
  /// Hands the added tokens to the model and sees what the post-processor
  /// adds (TorchTitan's _infer_should_add_bos_eos encodes "" for that).
  void finish();

private:
  llvm::Error fail(const Twine &where, const Twine &message) const {
    return fileError(path, where + ": " + message);
  }
  llvm::Error refuseType(const Twine &where, const json::Object &object,
                         StringRef supported) const {
    auto type = object.getString("type");
    return fail(where, "type '" + (type ? *type : StringRef("?")) +
                           "' is not supported (titan reads " + supported +
                           ")");
  }

  llvm::Error readModel(const json::Object &model);
  llvm::Error readMerges(const json::Array &merges,
                         const llvm::StringMap<int32_t> &vocab);
  llvm::Error readPreTokenizer(const json::Object &pre, StringRef where,
                               bool &byteLevel);
  llvm::Error readPostProcessor(const json::Object &post, StringRef where,
                                bool &sawTemplate);
  /// Adds a token as tokenizers' AddedVocabulary does, which also decides
  /// its id: the vocabulary's or an earlier added token's for a known
  /// content, else the next one (tokenizer.json's "id" is not read: on a
  /// consistent file it is the same).
  llvm::Error readAddedToken(const json::Object &token, const Twine &where);

  /// The id of `content`: an added token's, else the vocabulary's.
  std::optional<int32_t> idOf(StringRef content) const;
  void setIdBytes(int32_t id, StringRef bytes);

  StringRef path;
  BPEModel &m;
  llvm::StringMap<int32_t> vocab;
  llvm::StringMap<int32_t> addedIds;
  int32_t largestAdded = -1;
  /// Added tokens in tokenizers' two passes: not normalized, normalized.
  std::array<std::vector<std::pair<std::string, int32_t>>, 2> passes;
};

void HFReader::setIdBytes(int32_t id, StringRef bytes) {
  if (m.idBytes.size() <= size_t(id))
    m.idBytes.resize(id + 1);
  m.idBytes[id] = bytes.str();
}

std::optional<int32_t> HFReader::idOf(StringRef content) const {
  auto added = addedIds.find(content);
  if (added != addedIds.end())
    return added->second;
  auto regular = vocab.find(content);
  if (regular != vocab.end())
    return regular->second;
  return std::nullopt;
}

llvm::Error HFReader::read(const json::Object &root) {
  for (StringRef key : {"truncation", "padding", "normalizer"}) {
    const json::Value *value = root.get(key);
    if (value && !value->getAsNull()) {
      const json::Object *object = value->getAsObject();
      if (key == "normalizer" && object)
        return refuseType("normalizer", *object, "no normalizer");
      return fail(key, "must be null (titan does not " +
                           Twine(key == "normalizer" ? "normalize"
                                                     : "truncate or pad") +
                           ")");
    }
  }
  const json::Object *model = root.getObject("model");
  if (!model)
    return fail("model", "missing");
  if (auto error = readModel(*model))
    return error;

  const json::Object *pre = root.getObject("pre_tokenizer");
  bool byteLevel = false;
  if (!pre)
    return fail("pre_tokenizer", "missing (titan reads byte-level BPE)");
  if (auto error = readPreTokenizer(*pre, "pre_tokenizer", byteLevel))
    return error;
  if (!byteLevel)
    return fail("pre_tokenizer", "has no ByteLevel step (titan reads "
                                 "byte-level BPE)");

  if (const json::Object *post = root.getObject("post_processor")) {
    bool sawTemplate = false;
    if (auto error = readPostProcessor(*post, "post_processor", sawTemplate))
      return error;
  }
  if (const json::Object *decoder = root.getObject("decoder"))
    if (decoder->getString("type") != StringRef("ByteLevel"))
      return refuseType("decoder", *decoder, "the ByteLevel decoder");

  if (const json::Value *added = root.get("added_tokens")) {
    const json::Array *tokens = added->getAsArray();
    if (!tokens)
      return fail("added_tokens", "expected an array");
    for (auto [index, token] : llvm::enumerate(*tokens)) {
      const json::Object *object = token.getAsObject();
      std::string where = ("added_tokens[" + Twine(index) + "]").str();
      if (!object)
        return fail(where, "expected an object");
      if (auto error = readAddedToken(*object, where))
        return error;
    }
  }
  // The post-processor's ids (BOS) go into every document: one outside
  // the vocabulary would index past the model's embedding table.
  for (const std::vector<int32_t> *side : {&m.prefix, &m.suffix})
    for (int32_t id : *side)
      if (size_t(id) >= m.idBytes.size())
        return fail("post_processor.special_tokens",
                    "id " + Twine(id) + " is not in the vocabulary (" +
                        Twine(m.idBytes.size()) + " ids)");
  return llvm::Error::success();
}

llvm::Error HFReader::readModel(const json::Object &model) {
  if (model.getString("type") != StringRef("BPE"))
    return refuseType("model", model, "BPE models");
  for (StringRef key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (auto text = model.getString(key); text && !text->empty())
      return fail("model." + key, "is not supported (byte-level BPE has none)");
  if (const json::Value *dropout = model.get("dropout");
      dropout && !dropout->getAsNull())
    return fail("model.dropout", "is not supported (encoding is exact)");
  if (model.getBoolean("byte_fallback").value_or(false))
    return fail("model.byte_fallback", "is not supported");
  m.wholePieces = model.getBoolean("ignore_merges").value_or(false);

  const json::Object *entries = model.getObject("vocab");
  if (!entries)
    return fail("model.vocab", "missing or not an object");
  for (const auto &[key, value] : *entries) {
    std::optional<int64_t> id = value.getAsInteger();
    if (!id || *id < 0 || *id > kMaxTokenId)
      return fail("model.vocab." + Twine(StringRef(key)),
                  "expected an integer id from 0 to " + Twine(kMaxTokenId));
    vocab[key] = *id;
    // A token outside the byte-level alphabet cannot come out of the
    // merges; it keeps its text for decoding.
    std::optional<std::string> bytes = fromByteLevel(key);
    setIdBytes(*id, bytes ? *bytes : StringRef(key));
    if (bytes)
      m.bytesToId[*bytes] = *id;
  }
  bool allBytes = true;
  for (unsigned b = 0; b < 256; ++b) {
    auto it = vocab.find(byteLevelChar(b));
    m.byteIds[b] = it == vocab.end() ? -1 : it->second;
    allBytes &= it != vocab.end();
  }
  if (const json::Value *unk = model.get("unk_token");
      unk && !unk->getAsNull() && !allBytes)
    return fail("model.unk_token",
                "is not supported where some bytes have no token");

  const json::Array *merges = model.getArray("merges");
  if (!merges)
    return fail("model.merges", "missing or not an array");
  return readMerges(*merges, vocab);
}

llvm::Error HFReader::readMerges(const json::Array &merges,
                                 const llvm::StringMap<int32_t> &vocab) {
  m.pairMerges.reserve(merges.size());
  for (auto [rank, merge] : llvm::enumerate(merges)) {
    // Two formats: "a b" (tokenizers before 0.20) and ["a", "b"].
    StringRef left, right;
    if (auto text = merge.getAsString()) {
      std::tie(left, right) = text->split(' ');
      if (!text->contains(' ') || right.contains(' '))
        return fail("model.merges[" + Twine(rank) + "]",
                    "expected two tokens separated by one space");
    } else if (const json::Array *pair = merge.getAsArray();
               pair && pair->size() == 2 && (*pair)[0].getAsString() &&
               (*pair)[1].getAsString()) {
      left = *(*pair)[0].getAsString();
      right = *(*pair)[1].getAsString();
    } else {
      return fail("model.merges[" + Twine(rank) + "]",
                  "expected \"a b\" or [\"a\", \"b\"]");
    }
    auto a = vocab.find(left), b = vocab.find(right);
    auto merged = vocab.find((left + right).str());
    if (a == vocab.end() || b == vocab.end() || merged == vocab.end())
      return fail("model.merges[" + Twine(rank) + "]",
                  "'" + left + "' + '" + right + "' is not in the vocabulary");
    m.pairMerges[uint64_t(uint32_t(a->second)) << 32 | uint32_t(b->second)] = {
        uint32_t(rank), merged->second};
  }
  return llvm::Error::success();
}

llvm::Error HFReader::readPreTokenizer(const json::Object &pre, StringRef where,
                                       bool &byteLevel) {
  std::optional<StringRef> type = pre.getString("type");
  if (type == StringRef("Sequence")) {
    const json::Array *steps = pre.getArray("pretokenizers");
    if (!steps)
      return fail(where, "Sequence without pretokenizers");
    for (auto [index, step] : llvm::enumerate(*steps)) {
      std::string stepWhere =
          (where + ".pretokenizers[" + Twine(index) + "]").str();
      const json::Object *object = step.getAsObject();
      if (!object)
        return fail(stepWhere, "expected an object");
      if (byteLevel)
        return fail(stepWhere, "nothing may follow ByteLevel");
      if (auto error = readPreTokenizer(*object, stepWhere, byteLevel))
        return error;
    }
    return llvm::Error::success();
  }
  if (type == StringRef("Split")) {
    const json::Object *pattern = pre.getObject("pattern");
    std::optional<StringRef> regex =
        pattern ? pattern->getString("Regex") : std::nullopt;
    if (!regex)
      return fail(where, "Split needs a {\"Regex\": ...} pattern");
    if (pre.getString("behavior") != StringRef("Isolated") ||
        pre.getBoolean("invert").value_or(false))
      return fail(where, "Split is supported with behavior \"Isolated\" and "
                         "invert false (as Llama 3's)");
    if (m.split)
      return fail(where, "a second split regex is not supported");
    auto compiled = SplitRegex::compile(*regex, (path + ": " + where).str());
    if (!compiled)
      return compiled.takeError();
    m.split = std::move(*compiled);
    return llvm::Error::success();
  }
  if (type == StringRef("ByteLevel")) {
    if (pre.getBoolean("add_prefix_space").value_or(true))
      return fail(where, "ByteLevel with add_prefix_space true is not "
                         "supported");
    byteLevel = true;
    if (!pre.getBoolean("use_regex").value_or(true))
      return llvm::Error::success();
    if (m.split)
      return fail(where, "ByteLevel with use_regex true after a Split is not "
                         "supported");
    auto compiled = SplitRegex::compile(kGPT2Pattern, "GPT-2's regex");
    if (!compiled)
      return compiled.takeError();
    m.split = std::move(*compiled);
    return llvm::Error::success();
  }
  return refuseType(where, pre,
                    "Split(Regex) + ByteLevel as Llama 3's, or ByteLevel "
                    "as GPT-2's");
}

llvm::Error HFReader::readPostProcessor(const json::Object &post,
                                        StringRef where, bool &sawTemplate) {
  std::optional<StringRef> type = post.getString("type");
  if (type == StringRef("ByteLevel")) // Offsets only.
    return llvm::Error::success();
  if (type == StringRef("Sequence")) {
    const json::Array *steps = post.getArray("processors");
    if (!steps)
      return fail(where, "Sequence without processors");
    for (auto [index, step] : llvm::enumerate(*steps)) {
      std::string stepWhere =
          (where + ".processors[" + Twine(index) + "]").str();
      const json::Object *object = step.getAsObject();
      if (!object)
        return fail(stepWhere, "expected an object");
      if (auto error = readPostProcessor(*object, stepWhere, sawTemplate))
        return error;
    }
    return llvm::Error::success();
  }
  if (type != StringRef("TemplateProcessing"))
    return refuseType(where, post, "ByteLevel and TemplateProcessing");
  if (sawTemplate)
    return fail(where, "a second TemplateProcessing is not supported");
  sawTemplate = true;
  const json::Array *single = post.getArray("single");
  const json::Object *specials = post.getObject("special_tokens");
  if (!single || !specials)
    return fail(where, "TemplateProcessing needs single and special_tokens");
  std::vector<int32_t> *side = &m.prefix;
  for (const json::Value &item : *single) {
    const json::Object *object = item.getAsObject();
    if (const json::Object *sequence =
            object ? object->getObject("Sequence") : nullptr) {
      if (sequence->getString("id") != StringRef("A"))
        return fail(where + ".single", "only sequence A is supported");
      side = &m.suffix;
      continue;
    }
    const json::Object *special =
        object ? object->getObject("SpecialToken") : nullptr;
    std::optional<StringRef> name =
        special ? special->getString("id") : std::nullopt;
    const json::Object *entry = name ? specials->getObject(*name) : nullptr;
    const json::Array *ids = entry ? entry->getArray("ids") : nullptr;
    if (!ids)
      return fail(where + ".single",
                  "expected Sequence or SpecialToken items whose ids are in "
                  "special_tokens");
    for (const json::Value &id : *ids) {
      if (!id.getAsInteger() || *id.getAsInteger() < 0 ||
          *id.getAsInteger() > kMaxTokenId)
        return fail(where + ".special_tokens." + *name, "expected integer ids");
      side->push_back(*id.getAsInteger());
    }
  }
  return llvm::Error::success();
}

llvm::Error HFReader::readAddedToken(const json::Object &token,
                                     const Twine &where) {
  std::optional<StringRef> content = token.getString("content");
  if (!content)
    return fail(where, "expected a content string");
  for (StringRef flag : {"single_word", "lstrip", "rstrip"})
    if (token.getBoolean(flag).value_or(false))
      return fail(where, "'" + *content + "' sets " + flag +
                             ", which is not supported");
  std::optional<int32_t> id = idOf(*content);
  if (!id)
    id = largestAdded >= int32_t(vocab.size()) ? largestAdded + 1
                                               : int32_t(vocab.size());
  largestAdded = std::max(largestAdded, *id);
  addedIds[*content] = *id;
  setIdBytes(*id, *content);
  // A token's later entry replaces its earlier one, as tokenizers does.
  for (auto &pass : passes)
    llvm::erase_if(pass, [&](auto &t) { return t.first == *content; });
  passes[token.getBoolean("normalized").value_or(true)].emplace_back(
      content->str(), *id);
  return llvm::Error::success();
}

void HFReader::finish() {
  for (auto &pass : passes) {
    if (pass.empty())
      continue;
    AddedTokens &tokens = m.added.emplace_back();
    for (auto &[content, id] : pass)
      tokens.add(content, id);
  }
  auto adds = [&](std::optional<int32_t> id) {
    return id && (llvm::is_contained(m.prefix, *id) ||
                  llvm::is_contained(m.suffix, *id));
  };
  m.addsBos = adds(m.bos);
  m.addsEos = adds(m.eos);
}

/// A bos_token/eos_token/... entry: a string or {"content": ...}.
std::optional<StringRef> configToken(const json::Value &value) {
  if (auto text = value.getAsString())
    return text;
  if (const json::Object *object = value.getAsObject())
    return object->getString("content");
  return std::nullopt;
}

/// TorchTitan v0.2.0's HuggingFaceTokenizer._infer_special_tokens: the
/// config's standard special tokens and its added_tokens_decoder become
/// special tokens; BOS and EOS are those named bos_token and eos_token.
llvm::Error HFReader::readConfig(StringRef configPath,
                                 const json::Object &config) {
  path = configPath;
  std::optional<StringRef> bosToken, eosToken;
  for (StringRef key : {"bos_token", "eos_token", "pad_token", "unk_token",
                        "sep_token", "cls_token", "mask_token"}) {
    const json::Value *value = config.get(key);
    if (!value || value->getAsNull())
      continue;
    std::optional<StringRef> content = configToken(*value);
    if (!content)
      return fail(key, "expected a string or an object with content");
    if (key == "bos_token")
      bosToken = content;
    else if (key == "eos_token")
      eosToken = content;
    // A plain string is AddedToken(content, special=True): not normalized.
    json::Object plain{{"content", *content}, {"normalized", false}};
    const json::Object *token = value->getAsObject();
    if (auto error = readAddedToken(token ? *token : plain, key))
      return error;
  }
  if (const json::Object *decoder = config.getObject("added_tokens_decoder")) {
    for (const auto &[key, value] : *decoder) {
      const json::Object *token = value.getAsObject();
      if (!token || !token->getString("content"))
        continue; // TorchTitan skips these too.
      if (auto error = readAddedToken(*token, "added_tokens_decoder." +
                                                  Twine(StringRef(key))))
        return error;
    }
  }
  if (bosToken)
    m.bos = idOf(*bosToken);
  if (eosToken)
    m.eos = idOf(*eosToken);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<std::unique_ptr<Tokenizer>>
detail::loadHFTokenizer(StringRef jsonPath) {
  auto root = readJSON(jsonPath);
  if (!root)
    return root.takeError();
  if (!root->getAsObject())
    return fileError(jsonPath, "expected a JSON object");
  BPEModel model;
  model.kind = "tokenizer.json";
  model.rule = MergeRule::PairRank;
  HFReader reader(jsonPath, model);
  if (auto error = reader.read(*root->getAsObject()))
    return std::move(error);

  llvm::SmallString<256> configPath = llvm::sys::path::parent_path(jsonPath);
  llvm::sys::path::append(configPath, "tokenizer_config.json");
  if (llvm::sys::fs::exists(configPath)) {
    auto config = readJSON(configPath);
    if (!config)
      return config.takeError();
    if (!config->getAsObject())
      return fileError(configPath, "expected a JSON object");
    if (auto error = reader.readConfig(configPath, *config->getAsObject()))
      return std::move(error);
  }
  reader.finish();
  return createBPETokenizer(std::move(model));
}
