// SPDX-License-Identifier: MIT
// Training-run folders (tests/fixtures/runfolder/, written by transformers' Trainer and by torch.save
// of OLMo's, Lightning's and DeepSpeed's dict shapes; expectations from torch.load and safe_open):
// one document, each file a node with its own format, findings and tensors; saving a new folder
// rewrites only the files whose devices change.
#include "core/json/json.h"
#include "core/model/checkpoint.h"
#include "core/model/formatcapabilities.h"
#include "core/model/shardset.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"
#include "core/safety/shardsafety.h"
#include "core/tasks/savecopy.h"
#include "core/triage/triage.h"
#include "core/write/runfolderwriter.h"
#include "tests/common/testfiles.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <set>

using namespace ckpt;
using namespace ckpt::testing;

namespace {

QString runFolder(const QString& name)
{
    return fixturePath(QStringLiteral("runfolder/") + name);
}

JsonValue expectedOf(const QString& name)
{
    const QByteArray bytes = readAll(runFolder(name + QStringLiteral(".expected.json")));
    auto parsed = parseJson(std::string_view(bytes.constData(), std::size_t(bytes.size())));
    return parsed ? *parsed : JsonValue();
}

std::string shapeText(const Dimensions& shape)
{
    std::string text;
    for (const std::int64_t d : shape)
        text += std::to_string(d) + ",";
    return text;
}

std::string shapeText(const JsonValue& shape)
{
    std::string text;
    for (const JsonValue& d : shape.items())
        text += std::to_string(d.toInt64().value_or(-1)) + ",";
    return text;
}

const ShardFile* fileNamed(const Checkpoint& checkpoint, const std::string& name)
{
    for (const ShardFile& file : checkpoint.shardSet->shards)
        if (file.name == name)
            return &file;
    return nullptr;
}

} // namespace

class TestRunFolder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Every file torch (or safe_open) loads, with each tensor's name, dtype, shape and recorded
    // device, under its own node; files that are no checkpoint listed as such.
    void opensEveryFileAsTorchLoadsIt_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("folder");
        QTest::newRow("trainer") << QStringLiteral("trainer") << QStringLiteral("trainer/checkpoint-2");
        QTest::newRow("trainer sharded")
            << QStringLiteral("trainer_sharded") << QStringLiteral("trainer_sharded/checkpoint-2");
        QTest::newRow("olmo") << QStringLiteral("olmo") << QStringLiteral("olmo");
        QTest::newRow("lightning") << QStringLiteral("lightning") << QStringLiteral("lightning");
        QTest::newRow("deepspeed") << QStringLiteral("deepspeed") << QStringLiteral("deepspeed");
        // A Trainer output_dir: the newest checkpoint-N (get_last_checkpoint's) and the final model.
        QTest::newRow("trainer output")
            << QStringLiteral("trainer_output") << QStringLiteral("trainer_output");
        QTest::newRow("trainer output, deepspeed")
            << QStringLiteral("trainer_output_ds") << QStringLiteral("trainer_output_ds");
    }
    void opensEveryFileAsTorchLoadsIt()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, folder);
        const JsonValue truth = expectedOf(fixture);
        QVERIFY(truth.isObject());
        const Checkpoint checkpoint = readCheckpoint(runFolder(folder).toStdString());
        QVERIFY(checkpoint.shardSet);
        const ShardSet& set = *checkpoint.shardSet;
        QCOMPARE(set.layout, ShardLayout::RunFolder);
        QCOMPARE(std::string(formatCapabilities(checkpoint).name), std::string("run-folder"));
        QVERIFY(!checkpoint.hasErrors());

        std::set<std::string> topLevel;
        for (const std::uint32_t child : checkpoint.tree[0].children)
            topLevel.insert(checkpoint.tree[child].name.str());
        const std::string opened = truth.member("opened").toString();
        std::size_t checkpointFiles = 0;
        for (const JsonValue& file : truth.member("files").items()) {
            const std::string name = file.member("file").toString();
            const std::string kind = file.member("kind").toString();
            const bool inStep = name.find('/') == std::string::npos || name.starts_with(opened + "/");
            if (!opened.empty() && !inStep) {
                QVERIFY2(!fileNamed(checkpoint, name), name.c_str()); // a step `latest` does not name
                continue;
            }
            if (kind == "other") {
                bool listed = false;
                for (const FolderFile& other : set.otherFiles)
                    listed = listed || other.name == name;
                QVERIFY2(listed, name.c_str());
                QVERIFY2(topLevel.count(name), name.c_str());
                continue;
            }
            ++checkpointFiles;
            const ShardFile* shard = fileNamed(checkpoint, name);
            QVERIFY2(shard, name.c_str());
            QVERIFY2(shard->problem.empty(), shard->problem.c_str());
            QVERIFY2(topLevel.count(shard->group), shard->group.c_str());
            const auto& tensors = file.member("tensors").items();
            QCOMPARE(std::size_t(shard->model()->tensors.size()), tensors.size());
            // Torch's tensors, in the merged document under the file's node, by name.
            std::map<std::string, const TensorEntry*> ours;
            for (std::uint32_t t = shard->firstTensor;
                 t < shard->firstTensor + shard->model()->tensors.size(); ++t)
                ours[std::string(checkpoint.tensors[t].name)] = &checkpoint.tensors[t];
            for (const JsonValue& expected : tensors) {
                const std::string own = expected.member("name").toString();
                const std::string merged = shard->group + "." + own;
                const auto found = ours.find(merged);
                QVERIFY2(found != ours.end(), merged.c_str());
                const TensorEntry& tensor = *found->second;
                QCOMPARE(tensor.dtype.str(), expected.member("dtype").toString());
                QCOMPARE(shapeText(tensor.shape), shapeText(expected.member("shape")));
                const JsonValue* device = expected.find("device");
                if (device && !device->isNull())
                    QCOMPARE(
                        tensor.device ? tensor.device->str() : std::string("(none)"), device->toString());
                else if (kind == "safetensors")
                    QVERIFY(!tensor.device);
                // The tree path is the name: a rule for the node moves its tensors.
                QCOMPARE(checkpoint.treePath(tensor.treeNode), merged);
            }
        }
        QCOMPARE(set.shards.size(), checkpointFiles);
        if (fixture.startsWith(QStringLiteral("trainer_output"))) {
            // The folder get_last_checkpoint returns, and the step its DeepSpeed `latest` names.
            QCOMPARE(set.newestCheckpoint, opened);
            const std::string step = truth.member("latest_step").toString();
            QCOMPARE(set.latestStep, step.empty() ? std::string() : opened + "/" + step);
            bool said = false;
            for (const Finding& finding : checkpoint.findings)
                said = said
                    || (finding.code == FindingCode::RunFolderNewestCheckpoint
                        && finding.severity == Severity::Info
                        && finding.message.starts_with(opened + " is the newest"));
            QVERIFY(said);
        } else if (!opened.empty()) {
            QCOMPARE(set.latestStep, opened);
            bool said = false;
            for (const Finding& finding : checkpoint.findings)
                said = said || finding.code == FindingCode::RunFolderLatest;
            QVERIFY(said);
            QVERIFY(!set.foldersLeftOut.empty());
        }
    }

    // A sharded set inside the folder is one node; its shards share it.
    void shardedSetIsOneNode()
    {
        const Checkpoint checkpoint
            = readCheckpoint(runFolder(QStringLiteral("trainer_sharded/checkpoint-2")).toStdString());
        QVERIFY(checkpoint.shardSet);
        std::set<std::string> groups;
        std::size_t shards = 0;
        for (const ShardFile& file : checkpoint.shardSet->shards)
            if (file.name.ends_with(".safetensors")) {
                ++shards;
                groups.insert(file.group);
            }
        QCOMPARE(shards, std::size_t(2));
        QCOMPARE(groups, std::set<std::string>({"model.safetensors"}));
        std::size_t modelNodes = 0;
        for (const std::uint32_t child : checkpoint.tree[0].children)
            modelNodes += checkpoint.tree[child].name.starts_with("model") ? 1 : 0;
        QCOMPARE(modelNodes, std::size_t(2)); // the set, and its index listed as a file
    }

    // get_last_checkpoint compares the numbers, not the names: checkpoint-10 is newer than
    // checkpoint-5 (and than checkpoint-9, which sorts after it as text); an older one is left out
    // and named; a newest folder that holds nothing is said so rather than "no checkpoint".
    void newestCheckpointByNumber()
    {
        QTemporaryDir dir;
        const QString root = dir.path();
        for (const char* name : {"checkpoint-9", "checkpoint-0010", "checkpoint-x", "checkpoint-"})
            QVERIFY(QDir(root).mkpath(QString::fromLatin1(name)));
        QVERIFY(QFile::copy(runFolder(QStringLiteral("trainer_output/checkpoint-10/scheduler.pt")),
            root + QStringLiteral("/checkpoint-0010/scheduler.pt")));
        QVERIFY(QFile::copy(runFolder(QStringLiteral("trainer_output/checkpoint-5/scheduler.pt")),
            root + QStringLiteral("/checkpoint-9/scheduler.pt")));
        const Checkpoint checkpoint = readCheckpoint(root.toStdString());
        QVERIFY(checkpoint.shardSet);
        QCOMPARE(checkpoint.shardSet->layout, ShardLayout::RunFolder);
        QCOMPARE(checkpoint.shardSet->newestCheckpoint, std::string("checkpoint-0010"));
        QVERIFY(fileNamed(checkpoint, "checkpoint-0010/scheduler.pt"));
        QVERIFY(!fileNamed(checkpoint, "checkpoint-9/scheduler.pt"));
        const auto& left = checkpoint.shardSet->foldersLeftOut;
        QVERIFY(std::find(left.begin(), left.end(), "checkpoint-9") != left.end());
        QVERIFY(!checkpoint.hasErrors());

        // The newest holds no checkpoint file: an error that names it, not "no checkpoint".
        QVERIFY(QDir(root).mkpath(QStringLiteral("checkpoint-11")));
        const Checkpoint empty = readCheckpoint(root.toStdString());
        QVERIFY(empty.shardSet);
        QCOMPARE(empty.shardSet->newestCheckpoint, std::string("checkpoint-11"));
        bool said = false;
        for (const Finding& finding : empty.findings)
            said = said
                || (finding.code == FindingCode::RunFolderNewestCheckpoint
                    && finding.severity == Severity::Error
                    && finding.message.find("holds no checkpoint file") != std::string::npos);
        QVERIFY(said);
    }

    // A model folder alone still opens as the model it is (not a run folder).
    void modelFolderStaysAModel()
    {
        const Checkpoint checkpoint = readCheckpoint(fixturePath("sharded/bin_cuda").toStdString());
        QVERIFY(checkpoint.shardSet);
        QCOMPARE(checkpoint.shardSet->layout, ShardLayout::HuggingFaceBin);
    }

    // A truncated file: the others are shown, the bad one is named.
    void truncatedFileIsNamed()
    {
        const Checkpoint checkpoint
            = readCheckpoint(runFolder(QStringLiteral("broken_truncated")).toStdString());
        QVERIFY(checkpoint.shardSet);
        QCOMPARE(checkpoint.shardSet->layout, ShardLayout::RunFolder);
        const ShardFile* bad = fileNamed(checkpoint, "optim.pt");
        QVERIFY(bad);
        QVERIFY(!bad->problem.empty());
        bool named = false;
        for (const Finding& finding : checkpoint.findings)
            named = named
                || (finding.code == FindingCode::RunFolderFileUnreadable && finding.record == "optim.pt"
                    && finding.message.starts_with("optim.pt"));
        QVERIFY(named);
        for (const char* good : {"model.pt", "train.pt"}) {
            const ShardFile* file = fileNamed(checkpoint, good);
            QVERIFY(file);
            QVERIFY2(file->problem.empty(), file->problem.c_str());
            QVERIFY(file->storageCount > 0);
        }
        // The triage runs and says it too.
        TriageOptions options;
        options.target = MachineInventory {};
        const TriageReport report = triage(checkpoint, options);
        bool reported = false;
        for (const Finding& finding : report.findings)
            reported = reported || finding.code == FindingCode::RunFolderFileUnreadable;
        QVERIFY(reported);
    }

    // A truncated file inside the newest checkpoint's DeepSpeed step: named, the others shown.
    void truncatedFileInNewestCheckpointIsNamed()
    {
        const Checkpoint checkpoint
            = readCheckpoint(runFolder(QStringLiteral("trainer_output_broken")).toStdString());
        QVERIFY(checkpoint.shardSet);
        QCOMPARE(checkpoint.shardSet->layout, ShardLayout::RunFolder);
        QCOMPARE(checkpoint.shardSet->newestCheckpoint, std::string("checkpoint-2"));
        const std::string badName = "checkpoint-2/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt";
        const ShardFile* bad = fileNamed(checkpoint, badName);
        QVERIFY(bad);
        QVERIFY(!bad->problem.empty());
        bool named = false;
        for (const Finding& finding : checkpoint.findings)
            named = named
                || (finding.code == FindingCode::RunFolderFileUnreadable && finding.record == badName
                    && finding.message.starts_with(badName));
        QVERIFY(named);
        const ShardFile* model
            = fileNamed(checkpoint, "checkpoint-2/global_step2/mp_rank_00_model_states.pt");
        QVERIFY(model);
        QVERIFY2(model->problem.empty(), model->problem.c_str());
        QCOMPARE(model->storageCount, std::uint32_t(7)); // torch.load's (trainer_output_broken.expected.json)
    }

    // Saving: only files whose devices change are rewritten, the rest copied byte for byte, never
    // into the input; a damaged file the plan would change refuses the save, named.
    void savesOnlyWhatChanges()
    {
        const QString input = runFolder(QStringLiteral("deepspeed"));
        const Checkpoint checkpoint = readCheckpoint(input.toStdString());
        PlacementPlan plan(checkpoint);
        plan.apply(PlacementRule {PlacementRule::Kind::MapTag, "cuda:0", "cpu"});
        // Only the model file: its node's rule.
        PlacementPlan modelOnly(checkpoint);
        modelOnly.apply(PlacementRule {
            PlacementRule::Kind::MoveModule, "global_step2/mp_rank_00_model_states.pt", "cpu"});
        QCOMPARE(runFolderFilesToRewrite(checkpoint, modelOnly),
            std::vector<std::string>({"global_step2/mp_rank_00_model_states.pt"}));

        QTemporaryDir dir;
        const QString output = dir.path() + QStringLiteral("/saved");
        SaveCopyRequest request;
        request.input = &checkpoint;
        request.plan = &modelOnly;
        request.outputPath = output.toStdString();
        const SaveCopyOutcome outcome = saveRemappedCopy(request);
        QVERIFY2(outcome.written(), outcome.why.c_str());
        QVERIFY(outcome.folder);
        QCOMPARE(outcome.folder->shards.size(), std::size_t(1));
        QVERIFY(outcome.folder->shards.front().verified);
        const QString optimizer = QStringLiteral("/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt");
        QCOMPARE(sha256Of(output + optimizer), sha256Of(input + optimizer));
        QCOMPARE(readAll(output + QStringLiteral("/latest")), readAll(input + QStringLiteral("/latest")));
        QVERIFY(!QFile::exists(output + QStringLiteral("/global_step1")));
        QVERIFY(!outcome.folder->filesLeftOut.empty());
        const Checkpoint back = readCheckpoint(output.toStdString());
        QVERIFY(back.shardSet);
        QCOMPARE(back.shardSet->layout, ShardLayout::RunFolder);
        for (const TensorEntry& tensor : back.tensors)
            QCOMPARE(tensor.device->str(),
                std::string(tensor.name.starts_with("global_step2/mp_rank_00") ? "cpu" : "cuda:0"));

        // Never into the input, nor a folder inside it.
        request.plan = &plan;
        request.outputPath = QString(input + QStringLiteral("/inside")).toStdString();
        const SaveCopyOutcome inside = saveRemappedCopy(request);
        QVERIFY(!inside.written());
        QVERIFY2(inside.why.find("inside the input folder") != std::string::npos, inside.why.c_str());
        QVERIFY(!QFile::exists(input + QStringLiteral("/inside")));
    }

    // training_args.bin (a pickled TrainingArguments) rates "cannot verify". Copying it byte for
    // byte runs nothing of it, so a save that rewrites only other files needs no override; the
    // file keeps its rating, and the copy says it carries it. A dangerous file the plan rewrites
    // still needs the override.
    void copiedFilesNeedNoOverride()
    {
        const QString input = runFolder(QStringLiteral("trainer/checkpoint-2"));
        const Checkpoint checkpoint = readCheckpoint(input.toStdString());
        QVERIFY(rateShardSafety(checkpoint).dangerous()); // the folder's verdict stays truthful
        PlacementPlan plan(checkpoint);
        plan.apply(PlacementRule {PlacementRule::Kind::MapTag, "cuda:0", "cpu"});
        QCOMPARE(runFolderFilesToRewrite(checkpoint, plan), std::vector<std::string>({"optimizer.pt"}));
        QVERIFY(!refuseSaveCopy(checkpoint, false, false, &plan));
        QVERIFY(refuseSaveCopy(checkpoint, false)); // without the plan, the whole folder is judged

        QTemporaryDir dir;
        SaveCopyRequest request;
        request.input = &checkpoint;
        request.plan = &plan;
        request.outputPath = QString(dir.path() + QStringLiteral("/out")).toStdString();
        const SaveCopyOutcome outcome = saveRemappedCopy(request);
        QVERIFY2(outcome.written(), outcome.why.c_str());
        QCOMPARE(
            outcome.assessment.dangerousCopiedUnchanged, std::vector<std::string>({"training_args.bin"}));
        QCOMPARE(sha256Of(dir.path() + QStringLiteral("/out/training_args.bin")),
            sha256Of(input + QStringLiteral("/training_args.bin")));
        QVERIFY(outcome.carriesDanger());
        QVERIFY(outcome.copySafety && outcome.copySafety->dangerous());
        bool said = false;
        for (const Finding& finding : outcome.findings)
            said = said
                || (finding.code == FindingCode::CopyAsDangerous
                    && finding.message.find("training_args.bin") != std::string::npos);
        QVERIFY(said);

        // A folder with a whole pickled model (cannot verify, storages on the CPU): a plan that
        // rewrites it needs the override; one that leaves it alone does not.
        const QString mixed = dir.path() + QStringLiteral("/mixed");
        QVERIFY(QDir().mkpath(mixed));
        for (const char* name : {"optimizer.pt", "training_args.bin", "trainer_state.json"})
            QVERIFY(QFile::copy(input + QLatin1Char('/') + QLatin1String(name),
                mixed + QLatin1Char('/') + QLatin1String(name)));
        QVERIFY(QFile::copy(
            fixturePath(QStringLiteral("torch-2/whole_module.pt")), mixed + QStringLiteral("/model.pt")));
        const Checkpoint folder = readCheckpoint(mixed.toStdString());
        QVERIFY(folder.shardSet);
        PlacementPlan moveModel(folder);
        moveModel.apply(PlacementRule {PlacementRule::Kind::MoveModule, "model.pt", "cuda:1"});
        const auto refused = refuseSaveCopy(folder, false, false, &moveModel);
        QVERIFY(refused);
        QCOMPARE(refused->status, SaveCopyStatus::RefusedDangerous);
        QVERIFY2(refused->why.starts_with("model.pt"), refused->why.c_str());
        request.input = &folder;
        request.plan = &moveModel;
        request.outputPath = QString(dir.path() + QStringLiteral("/mixed-model")).toStdString();
        QCOMPARE(saveRemappedCopy(request).status, SaveCopyStatus::RefusedDangerous);
        QVERIFY(!QFile::exists(dir.path() + QStringLiteral("/mixed-model")));
        request.allowDangerous = true;
        const SaveCopyOutcome anyway = saveRemappedCopy(request);
        QVERIFY2(anyway.written(), anyway.why.c_str());
        PlacementPlan moveOptimizer(folder);
        moveOptimizer.apply(PlacementRule {PlacementRule::Kind::MoveModule, "optimizer.pt", "cpu"});
        QVERIFY(!refuseSaveCopy(folder, false, false, &moveOptimizer));
        request.allowDangerous = false;
        request.plan = &moveOptimizer;
        request.outputPath = QString(dir.path() + QStringLiteral("/mixed-optimizer")).toStdString();
        const SaveCopyOutcome optimizerOnly = saveRemappedCopy(request);
        QVERIFY2(optimizerOnly.written(), optimizerOnly.why.c_str());
        QCOMPARE(optimizerOnly.assessment.dangerousCopiedUnchanged,
            std::vector<std::string>({"model.pt", "training_args.bin"}));
        QCOMPARE(sha256Of(dir.path() + QStringLiteral("/mixed-optimizer/model.pt")),
            sha256Of(mixed + QStringLiteral("/model.pt")));
    }

    void damagedFileThePlanChangesRefuses()
    {
        const Checkpoint checkpoint
            = readCheckpoint(runFolder(QStringLiteral("broken_truncated")).toStdString());
        QTemporaryDir dir;
        PlacementPlan all(checkpoint);
        all.apply(PlacementRule {PlacementRule::Kind::MapTag, "cuda:0", "cpu"});
        SaveCopyRequest request;
        request.input = &checkpoint;
        request.plan = &all;
        request.outputPath = QString(dir.path() + QStringLiteral("/all")).toStdString();
        SaveCopyOutcome outcome = saveRemappedCopy(request);
        QVERIFY(!outcome.written());
        QVERIFY2(outcome.why.starts_with("optim.pt"), outcome.why.c_str());
        QVERIFY(!QFile::exists(dir.path() + QStringLiteral("/all")));
        // The model alone: the damaged file is copied as it is.
        PlacementPlan model(checkpoint);
        model.apply(PlacementRule {PlacementRule::Kind::MoveModule, "model.pt", "cpu"});
        request.plan = &model;
        request.outputPath = QString(dir.path() + QStringLiteral("/model")).toStdString();
        outcome = saveRemappedCopy(request);
        QVERIFY2(outcome.written(), outcome.why.c_str());
        QCOMPARE(sha256Of(dir.path() + QStringLiteral("/model/optim.pt")),
            sha256Of(runFolder(QStringLiteral("broken_truncated/optim.pt"))));
    }
};

QTEST_GUILESS_MAIN(TestRunFolder)
#include "tst_runfolder.moc"
