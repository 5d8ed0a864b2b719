// SPDX-License-Identifier: MIT
// `ckpt-inspect remap` as a user runs it, judged by real torch: every generated fixture and every
// readable corpus checkpoint is remapped three ways and each copy is checked by
// tests/remap/verify_remap.py under torch 1.13 and under the modern torch (tags torch sees, values,
// weights_only, records byte for byte). Plus the headline case (a cuda:1 checkpoint that torch
// refuses on this machine loads after `--map '*=cpu'`) and the faults of the write.
//
// Why one file of about 730 lines: one suite per command; most of its length is the data-driven
// table of fixtures and corpus files with the expectations for each, sent to one verifier process.
#include "fixturecomparison.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <unistd.h>

#include <memory>
#include <optional>

namespace {

const QString kVerifier = QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/verify_remap.py");
const QString kSelfTest = QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/selftest_verifier.py");
const QString kHeadline = QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/headline_load.py");
const QString kMakeGpuModel = QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/make_gpu_model.py");
const QString kCheckGpuModel = QStringLiteral(CKPT_SOURCE_DIR "/tests/remap/check_gpu_model.py");
const QString kCorpus = ckpt::testing::corpusFilesDir();

using Run = ckpt::testing::ProgramRun;

Run runInspector(const QStringList& arguments)
{
    return runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments);
}

QJsonObject parseObject(const QByteArray& text)
{
    return QJsonDocument::fromJson(text).object();
}

QStringList entriesOf(const QString& folder)
{
    return QDir(folder).entryList(
        QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot, QDir::Name);
}

// One `verify_remap.py --serve` process: a request per line, the report lines back, then
// "@@end STATUS". Importing torch costs seconds, so each torch pays it once per suite run.
class Verifier {
public:
    Verifier(QString interpreter, QString label, QString stderrPath)
        : m_interpreter(std::move(interpreter))
        , m_label(std::move(label))
        , m_stderrPath(std::move(stderrPath))
    { }
    ~Verifier() { stop(); }

    const QString& label() const { return m_label; }
    const QString& version() const { return m_version; }

    bool start(QString* error)
    {
        stop();
        m_process = std::make_unique<QProcess>();
        m_process->setStandardErrorFile(m_stderrPath, QIODevice::Append);
        m_process->start(m_interpreter, {kVerifier, QStringLiteral("--serve")});
        QByteArray line;
        if (!m_process->waitForStarted(30'000) || !readLine(&line, 120'000) || !line.startsWith("@@ready")) {
            *error = m_label + QStringLiteral(": verifier did not start (") + m_interpreter
                + QStringLiteral("): ") + QString::fromUtf8(line) + stderrTail();
            stop();
            return false;
        }
        m_version = QString::fromUtf8(line.mid(8)).trimmed();
        return true;
    }

    bool running() const { return m_process && m_process->state() == QProcess::Running; }

    void send(const QJsonObject& request)
    {
        m_pending = running();
        if (m_pending) {
            m_process->write(QJsonDocument(request).toJson(QJsonDocument::Compact) + '\n');
            m_process->waitForBytesWritten(10'000);
        }
    }

    // The report for the last request: status 0 = every check passed.
    bool receive(int* status, QStringList* lines, QString* error)
    {
        if (!m_pending) {
            *error = m_label + QStringLiteral(": verifier is not running");
            return false;
        }
        m_pending = false;
        QByteArray line;
        while (readLine(&line, 300'000)) {
            if (line.startsWith("@@end ")) {
                *status = line.mid(6).trimmed().toInt();
                return true;
            }
            lines->append(QString::fromUtf8(line));
        }
        *error = m_label + QStringLiteral(": verifier died or hung; restarting it. ") + stderrTail();
        QString restartError;
        start(&restartError);
        return false;
    }

private:
    bool readLine(QByteArray* line, int timeoutMs)
    {
        QElapsedTimer timer;
        timer.start();
        while (!m_process->canReadLine()) {
            if (m_process->state() != QProcess::Running && !m_process->waitForReadyRead(100))
                return false;
            if (timer.elapsed() > timeoutMs)
                return false;
            m_process->waitForReadyRead(1000);
        }
        *line = m_process->readLine();
        while (line->endsWith('\n') || line->endsWith('\r'))
            line->chop(1);
        return true;
    }

    QString stderrTail() const
    {
        QFile file(m_stderrPath);
        if (!file.open(QIODevice::ReadOnly))
            return {};
        const QByteArray all = file.readAll();
        return QStringLiteral(" stderr: ") + QString::fromUtf8(all.right(1500));
    }

    void stop()
    {
        if (!m_process)
            return;
        m_process->closeWriteChannel();
        if (!m_process->waitForFinished(10'000)) {
            m_process->kill();
            m_process->waitForFinished(5'000);
        }
        m_process.reset();
    }

    QString m_interpreter;
    QString m_label;
    QString m_stderrPath;
    QString m_version;
    std::unique_ptr<QProcess> m_process;
    bool m_pending = false;
};

// What `ckpt-inspect info --json` says about a file: what the plan is computed from.
struct TensorRow {
    QString name;
    QString storage; // empty: none
    QString device; // empty: none recorded
    QString layout;
};

struct InfoReport {
    int exitCode = -1;
    QString format;
    QString safety; // the safety rating ("known-inert", "dangerous", ...)
    QList<TensorRow> tensors;
    QList<QPair<QString, QString>> storages; // key, recorded device ("" for none)
};

InfoReport readInfo(const QString& checkpoint)
{
    InfoReport report;
    const Run run = runInspector({QStringLiteral("info"), QStringLiteral("--json"), checkpoint});
    report.exitCode = run.exitCode;
    const QJsonObject info = parseObject(run.out);
    report.format = info.value(QStringLiteral("format")).toString();
    report.safety
        = info.value(QStringLiteral("safety")).toObject().value(QStringLiteral("rating")).toString();
    const QJsonArray tensors = info.value(QStringLiteral("tensors")).toArray();
    for (const auto& value : tensors) {
        const QJsonObject t = value.toObject();
        report.tensors.append(
            {t.value(QStringLiteral("name")).toString(), t.value(QStringLiteral("storage")).toString(),
                t.value(QStringLiteral("device")).toString(), t.value(QStringLiteral("layout")).toString()});
    }
    const QJsonArray storages = info.value(QStringLiteral("storages")).toArray();
    for (const auto& value : storages) {
        const QJsonObject s = value.toObject();
        report.storages.append(
            {s.value(QStringLiteral("key")).toString(), s.value(QStringLiteral("device")).toString()});
    }
    return report;
}

// The names of the callables the safety verdict cannot vouch for, sorted (info --json).
QStringList unsafeNamesOf(const QString& file)
{
    const Run run = runInspector({QStringLiteral("info"), QStringLiteral("--json"), file});
    QStringList names;
    const QJsonArray unsafe = parseObject(run.out)
                                  .value(QStringLiteral("safety"))
                                  .toObject()
                                  .value(QStringLiteral("unsafe"))
                                  .toArray();
    for (const auto& value : unsafe)
        names.append(value.toObject().value(QStringLiteral("name")).toString());
    names.sort();
    return names;
}

struct Rule {
    QString flag; // --map, --tensor, --module
    QString subject;
    QString target;
};

bool nameUnder(const QString& name, const QString& prefix)
{
    return name == prefix || name.startsWith(prefix + u'.') || name.startsWith(prefix + u'[');
}

// The plan computed here, independently of the tool: a device belongs to a storage; map rules
// look at the recorded tag (like a map_location dict; meta stays meta); tensor and module rules
// move every storage viewed by a tensor they name; later rules win. Tensors without a storage
// that record their own device (wrapper subclasses) are units of their own.
struct ExpectedPlan {
    QHash<QString, QString> storageTags; // storage key -> planned tag
    QJsonObject tensorDevices; // storage-less tensor name -> planned device
};

ExpectedPlan expectedPlan(const InfoReport& info, const QList<Rule>& rules)
{
    struct Unit {
        QString storage;
        QString tensor;
        QString recorded;
        QString planned;
        QStringList names;
    };
    QList<Unit> units;
    QHash<QString, qsizetype> unitOfStorage;
    for (const auto& [key, device] : info.storages) {
        unitOfStorage.insert(key, units.size());
        units.append({key, {}, device, device, {}});
    }
    for (const TensorRow& t : info.tensors) {
        if (!t.storage.isEmpty() && unitOfStorage.contains(t.storage))
            units[unitOfStorage.value(t.storage)].names.append(t.name);
        else if (t.storage.isEmpty() && !t.device.isEmpty()
            && (t.layout == QStringLiteral("strided") || t.layout == QStringLiteral("quantized")))
            units.append({{}, t.name, t.device, t.device, {t.name}});
    }
    for (const Rule& rule : rules) {
        for (Unit& unit : units) {
            bool matches = false;
            if (rule.flag == QStringLiteral("--map"))
                matches = !unit.recorded.isEmpty() && unit.recorded != QStringLiteral("meta")
                    && (rule.subject == QStringLiteral("*") || rule.subject == unit.recorded);
            else
                for (const QString& name : std::as_const(unit.names))
                    matches = matches
                        || (rule.flag == QStringLiteral("--tensor") ? name == rule.subject
                                                                    : nameUnder(name, rule.subject));
            if (matches)
                unit.planned = rule.target;
        }
    }
    ExpectedPlan plan;
    for (const Unit& unit : std::as_const(units)) {
        if (!unit.storage.isEmpty())
            plan.storageTags.insert(unit.storage, unit.planned);
        else
            plan.tensorDevices.insert(unit.tensor, unit.planned);
    }
    return plan;
}

struct RemapCase {
    QString label;
    QList<Rule> rules;
};

QStringList ruleArguments(const QList<Rule>& rules)
{
    QStringList arguments;
    for (const Rule& rule : rules)
        arguments << rule.flag << rule.subject + u'=' + rule.target;
    return arguments;
}

bool isAcceptedFormat(const QString& format)
{
    return format == QStringLiteral("torch-zip") || format == QStringLiteral("torch-legacy")
        || format == QStringLiteral("torchscript");
}

} // namespace

class TestRemapCommand : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_work;
    std::unique_ptr<Verifier> m_legacy;
    std::unique_ptr<Verifier> m_modern;
    QElapsedTimer m_clock;
    int m_copiesVerified = 0;

    QList<Verifier*> verifiers() const
    {
        QList<Verifier*> list {m_legacy.get()};
        if (m_modern)
            list.append(m_modern.get());
        return list;
    }

    // Runs `ckpt-inspect remap` for one case and checks what it says against the plan computed
    // here; returns the (output, summary, expectations) triple for the verifier, or nothing.
    std::optional<QJsonArray> remapOnce(const QString& checkpoint, const InfoReport& info,
        const RemapCase& remap, const QString& folder, QStringList* problems)
    {
        QDir().mkpath(folder);
        const QString output = folder + u'/' + QFileInfo(checkpoint).fileName();
        const QString where = remap.label + QStringLiteral(": ");
        QStringList arguments {
            QStringLiteral("remap"), checkpoint, QStringLiteral("-o"), output, QStringLiteral("--json")};
        arguments += ruleArguments(remap.rules);
        const Run run = runInspector(arguments);
        if (run.exitCode != 0) {
            problems->append(
                where + QStringLiteral("ckpt-inspect ") + arguments.join(u' ') + u'\n' + run.describe());
            return std::nullopt;
        }
        const QJsonObject summary = parseObject(run.out);
        if (summary.isEmpty()) {
            problems->append(where + QStringLiteral("--json printed no JSON object: ")
                + QString::fromUtf8(run.out.left(500)));
            return std::nullopt;
        }
        if (QFileInfo(summary.value(QStringLiteral("output")).toString()).canonicalFilePath()
            != QFileInfo(output).canonicalFilePath())
            problems->append(where + QStringLiteral("\"output\" is ")
                + summary.value(QStringLiteral("output")).toString());
        if (entriesOf(folder) != QStringList {QFileInfo(output).fileName()})
            problems->append(
                where + QStringLiteral("the output folder holds ") + entriesOf(folder).join(u','));

        // The plan the tool reports must be the plan computed here from `info`.
        const ExpectedPlan plan = expectedPlan(info, remap.rules);
        const QJsonArray storages = summary.value(QStringLiteral("storages")).toArray();
        if (storages.size() != info.storages.size())
            problems->append(where
                + QStringLiteral("%1 storages in the summary, info lists %2")
                      .arg(storages.size())
                      .arg(info.storages.size()));
        QHash<QString, QString> recorded;
        for (const auto& [key, device] : info.storages)
            recorded.insert(key, device);
        int reported = 0;
        for (const auto& value : storages) {
            const QJsonObject s = value.toObject();
            const QString key = s.value(QStringLiteral("key")).toString();
            if (!plan.storageTags.contains(key)) {
                problems->append(
                    where + QStringLiteral("summary lists storage '%1' that info does not").arg(key));
                continue;
            }
            if (s.value(QStringLiteral("recorded")).toString() != recorded.value(key))
                problems->append(where
                    + QStringLiteral("storage %1: recorded %2, info says %3")
                          .arg(key, s.value(QStringLiteral("recorded")).toString(), recorded.value(key)));
            if (s.value(QStringLiteral("planned")).toString() != plan.storageTags.value(key)
                && ++reported <= 5)
                problems->append(where
                    + QStringLiteral("storage %1 (recorded %2): planned %3, expected %4")
                          .arg(key, recorded.value(key), s.value(QStringLiteral("planned")).toString(),
                              plan.storageTags.value(key)));
        }

        QFile summaryFile(folder + QStringLiteral(".summary.json"));
        if (!summaryFile.open(QIODevice::WriteOnly) || summaryFile.write(run.out) != run.out.size())
            problems->append(where + QStringLiteral("cannot write ") + summaryFile.fileName());
        summaryFile.close();
        QFile expectFile(folder + QStringLiteral(".expect.json"));
        const QByteArray expect
            = QJsonDocument(QJsonObject {{QStringLiteral("tensor_devices"), plan.tensorDevices}}).toJson();
        if (!expectFile.open(QIODevice::WriteOnly) || expectFile.write(expect) != expect.size())
            problems->append(where + QStringLiteral("cannot write ") + expectFile.fileName());
        expectFile.close();
        return QJsonArray {output, summaryFile.fileName(), expectFile.fileName()};
    }

    void addRows(const QString& group, const QStringList& files, bool trusted)
    {
        for (const QString& file : files) {
            const InfoReport info = readInfo(file);
            const bool readable = info.exitCode == 0 || info.exitCode == 1;
            if (!trusted && (!readable || !isAcceptedFormat(info.format)))
                continue; // not something remap is for (safetensors, tar, junk, broken archives)
            QTest::newRow(qPrintable(group + u'/' + QFileInfo(file).fileName())) << file << trusted;
        }
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_clock.start();
        QVERIFY(m_work.isValid());
        const Run help = runInspector({QStringLiteral("help")});
        QVERIFY2(help.out.contains("remap"), "this ckpt-inspect has no remap command");
        QString error;
        m_legacy = std::make_unique<Verifier>(QStringLiteral(CKPT_LEGACY_PYTHON),
            QStringLiteral("torch 1.13"), m_work.filePath(QStringLiteral("verifier-legacy.stderr")));
        QVERIFY2(m_legacy->start(&error), qPrintable(error));
        const QString modern = QStringLiteral(CKPT_MODERN_PYTHON);
        if (modern.isEmpty()) {
            qInfo("no modern torch configured (CKPT_MODERN_PYTHON is empty): copies are checked under torch "
                  "1.13 only");
        } else {
            m_modern = std::make_unique<Verifier>(modern, QStringLiteral("modern torch"),
                m_work.filePath(QStringLiteral("verifier-modern.stderr")));
            QVERIFY2(m_modern->start(&error), qPrintable(error));
        }
        for (Verifier* verifier : verifiers())
            qInfo("verifier: %s", qPrintable(verifier->version()));
    }

    void cleanupTestCase()
    {
        qInfo("%d remapped copies verified; suite took %.1f s", m_copiesVerified, m_clock.elapsed() / 1000.0);
        m_legacy.reset();
        m_modern.reset();
    }

    // The verifier itself must catch what a broken writer would do (tampered copies written with
    // torch's own zip writer), or a green suite would mean nothing.
    void verifierCatchesTampering()
    {
        const Run run = runProgram(QStringLiteral(CKPT_LEGACY_PYTHON), {kSelfTest});
        QVERIFY2(run.exitCode == 0, qPrintable(run.describe()));
    }

    void remapsAndTorchAgrees_data()
    {
        QTest::addColumn<QString>("checkpoint");
        QTest::addColumn<bool>("trusted");
        for (const QString& version : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
            const QDir dir(fixturesDir() + u'/' + version);
            QStringList files;
            for (const QString& name : dir.entryList({QStringLiteral("*.pt")}, QDir::Files, QDir::Name))
                files << dir.filePath(name);
            QVERIFY2(files.size() >= 25, qPrintable(QStringLiteral("too few fixtures in ") + dir.path()));
            addRows(version, files, true);
        }
        const QDir corpus(kCorpus);
        if (!corpus.exists()) {
            qInfo("no corpus at %s: only the generated fixtures are remapped", qPrintable(kCorpus));
            return;
        }
        QStringList files;
        for (const QString& name : corpus.entryList(QDir::Files, QDir::Name))
            files << corpus.filePath(name);
        addRows(QStringLiteral("corpus"), files, false);
    }

    // Three copies per file: everything to the CPU, cuda:0 -> cuda:1, and one module moved to
    // cuda:1; each judged by torch 1.13 and the modern torch (verify_remap.py says what is checked).
    void remapsAndTorchAgrees()
    {
        QFETCH(QString, checkpoint);
        QFETCH(bool, trusted);
        const InfoReport info = readInfo(checkpoint);
        QVERIFY2(info.exitCode == 0 || info.exitCode == 1,
            qPrintable(QStringLiteral("info exit %1").arg(info.exitCode)));
        QVERIFY2(isAcceptedFormat(info.format), qPrintable(info.format));
        if (info.safety == QStringLiteral("dangerous")) {
            // Issue 24: a file rated dangerous or unverifiable (e.g. a whole model whose __main__
            // classes cannot be vetted) is refused, naming both ways out; with --allow-dangerous the
            // REMAPPED copy is written (every storage on the CPU), rated exactly as the input. Real
            // torch judges such a copy in dangerousWholeModelRemapsWithOverride.
            QTemporaryDir row(m_work.filePath(QStringLiteral("row-XXXXXX")));
            const QString out = row.filePath(QStringLiteral("copy.pt"));
            const Run refused = runInspector({QStringLiteral("remap"), checkpoint, QStringLiteral("-o"), out,
                QStringLiteral("--map"), QStringLiteral("*=cpu")});
            QCOMPARE(refused.exitCode, 4);
            QVERIFY(!QFile::exists(out));
            const Run copied = runInspector(
                {QStringLiteral("remap"), checkpoint, QStringLiteral("-o"), out, QStringLiteral("--map"),
                    QStringLiteral("*=cpu"), QStringLiteral("--allow-dangerous"), QStringLiteral("--json")});
            if (copied.exitCode == 2) { // this file cannot be remapped: said so, nothing written
                QVERIFY2(copied.err.contains("cannot remap")
                        || copied.err.contains("refusing to give the copy")
                        || copied.err.contains("could not write"),
                    qPrintable(copied.describe()));
                QVERIFY(!QFile::exists(out));
                qInfo(
                    "rated dangerous: refused; with --allow-dangerous: %s", copied.err.left(300).constData());
                return;
            }
            QVERIFY2(copied.exitCode == 0, qPrintable(copied.describe()));
            const QJsonObject report = parseObject(copied.out);
            QVERIFY(report.value(QStringLiteral("as_dangerous_as_input")).toBool());
            QCOMPARE(unsafeNamesOf(out), unsafeNamesOf(checkpoint));
            const InfoReport copy = readInfo(out);
            QCOMPARE(copy.safety, QStringLiteral("dangerous"));
            for (const auto& [key, device] : std::as_const(copy.storages))
                QVERIFY2(device == QStringLiteral("cpu"), qPrintable(key + u' ' + device));
            qInfo("rated dangerous: refused, and remapped with --allow-dangerous (%d storages on cpu)",
                int(copy.storages.size()));
            return;
        }

        QList<RemapCase> cases {
            {QStringLiteral("to-cpu"),
                {{QStringLiteral("--map"), QStringLiteral("*"), QStringLiteral("cpu")}}},
            {QStringLiteral("cuda0-to-cuda1"),
                {{QStringLiteral("--map"), QStringLiteral("cuda:0"), QStringLiteral("cuda:1")}}},
        };
        QString prefix;
        for (const TensorRow& t : std::as_const(info.tensors)) {
            if (t.name.contains(u'.')) {
                prefix = t.name.section(u'.', 0, 0);
                break;
            }
        }
        // A flat file has no module: then the "module" is the first tensor's own name (a prefix
        // matches the name itself), so every file still gets one per-module move.
        for (const TensorRow& t : std::as_const(info.tensors)) {
            if (!prefix.isEmpty())
                break;
            if (!t.name.isEmpty() && !t.name.contains(u'['))
                prefix = t.name;
        }
        if (prefix.isEmpty())
            qInfo("no named tensor: no per-module move for this file");
        else
            cases.append(
                {QStringLiteral("module"), {{QStringLiteral("--module"), prefix, QStringLiteral("cuda:1")}}});

        QTemporaryDir row(m_work.filePath(QStringLiteral("row-XXXXXX")));
        QVERIFY(row.isValid());
        QStringList problems;
        QJsonArray requests;
        for (const RemapCase& remap : std::as_const(cases)) {
            if (auto triple = remapOnce(checkpoint, info, remap, row.filePath(remap.label), &problems))
                requests.append(*triple);
        }
        if (!requests.isEmpty()) {
            const QJsonObject request {{QStringLiteral("original"), checkpoint},
                {QStringLiteral("trusted"), trusted}, {QStringLiteral("cases"), requests}};
            for (Verifier* verifier : verifiers())
                verifier->send(request);
            for (Verifier* verifier : verifiers()) {
                int status = -1;
                QStringList lines;
                QString error;
                if (!verifier->receive(&status, &lines, &error)) {
                    problems.append(error);
                    continue;
                }
                QStringList skips; // one line per copy says the same: show it once
                for (const QString& line : std::as_const(lines)) {
                    const QString reason = line.section(u']', 1).trimmed();
                    if (line.startsWith(QStringLiteral("skipped")) && !skips.contains(reason)) {
                        skips.append(reason);
                        qInfo("%s: %s", qPrintable(verifier->label()), qPrintable(line.left(400)));
                    }
                }
                if (status != 0)
                    problems.append(verifier->label() + QStringLiteral(" (") + verifier->version()
                        + QStringLiteral("):\n  ") + lines.join(QStringLiteral("\n  ")));
                else
                    m_copiesVerified += int(requests.size());
            }
        }
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(u'\n')));
    }

    // Issue 24's commonest "cannot verify" file: a whole model, torch.save(model) on a GPU, its
    // classes from the user's own package (tests/remap/usercode). Written by real torch 1.13 and
    // 2.x; remapped with --map cuda:1=cpu only under the override; the copy loaded by real torch
    // 1.13 and 2.x without map_location (tests/remap/check_gpu_model.py).
    void dangerousWholeModelRemapsWithOverride_data()
    {
        QTest::addColumn<QString>("writer");
        QTest::newRow("torch 1.13") << QStringLiteral(CKPT_LEGACY_PYTHON);
        QTest::newRow("torch 2.x") << QStringLiteral(CKPT_MODERN_PYTHON);
    }

    void dangerousWholeModelRemapsWithOverride()
    {
        QFETCH(QString, writer);
        if (writer.isEmpty())
            QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty)");
        QTemporaryDir dir(m_work.filePath(QStringLiteral("whole-XXXXXX")));
        QVERIFY(dir.isValid());
        const Run made = runProgram(writer, {kMakeGpuModel, dir.path()});
        QVERIFY2(made.exitCode == 0, qPrintable(made.describe()));
        const QString original = dir.filePath(QStringLiteral("whole_model.pt"));
        const QString expected = original + QStringLiteral(".expected.json");
        const QByteArray before = sha256Of(original);
        const InfoReport info = readInfo(original);
        QCOMPARE(info.safety, QStringLiteral("dangerous")); // rightly: gpunets.blocks.* cannot be vetted
        QVERIFY(unsafeNamesOf(original).contains(QStringLiteral("gpunets.blocks.GpuNet")));
        int onCuda1 = 0;
        for (const auto& [key, device] : std::as_const(info.storages))
            onCuda1 += device == QStringLiteral("cuda:1") ? 1 : 0;
        QVERIFY(onCuda1 >= 10);

        // Without the override: refused (exit 4), nothing written, both ways out named.
        const QString out = dir.filePath(QStringLiteral("out/whole_model-cpu.pt"));
        QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("out"))));
        const Run refused = runInspector({QStringLiteral("remap"), original, QStringLiteral("-o"), out,
            QStringLiteral("--map"), QStringLiteral("cuda:1=cpu")});
        QCOMPARE(refused.exitCode, 4);
        QVERIFY2(refused.err.contains("refusing to write a copy") && refused.err.contains("--allow-dangerous")
                && refused.err.contains("ckpt-inspect extract")
                && refused.err.contains("gpunets.blocks.GpuNet"),
            qPrintable(refused.describe()));
        QVERIFY(entriesOf(dir.filePath(QStringLiteral("out"))).isEmpty());

        // `plan --save` writes a copy too, through the same task: refused the same way (it has no
        // override of its own and names remap's).
        const QString planned = dir.filePath(QStringLiteral("out/planned.pt"));
        const Run plan = runInspector({QStringLiteral("plan"), original, QStringLiteral("--target"),
            QStringLiteral("cpu=8GiB"), QStringLiteral("--save"), planned});
        QVERIFY2(plan.exitCode == 4 && plan.err.contains("refusing to write a copy")
                && plan.err.contains("--allow-dangerous") && plan.err.contains("ckpt-inspect extract"),
            qPrintable(plan.describe()));
        QVERIFY(entriesOf(dir.filePath(QStringLiteral("out"))).isEmpty());

        // With it: the remapped copy, verified, rated again, and said to be as dangerous.
        const Run copied = runInspector(
            {QStringLiteral("remap"), original, QStringLiteral("-o"), out, QStringLiteral("--map"),
                QStringLiteral("cuda:1=cpu"), QStringLiteral("--allow-dangerous"), QStringLiteral("--json")});
        QVERIFY2(copied.exitCode == 0, qPrintable(copied.describe()));
        const QJsonObject report = parseObject(copied.out);
        QVERIFY(report.value(QStringLiteral("verified")).toBool());
        QVERIFY(report.value(QStringLiteral("as_dangerous_as_input")).toBool());
        QCOMPARE(report.value(QStringLiteral("safety")).toObject().value(QStringLiteral("rating")).toString(),
            QStringLiteral("dangerous"));
        QVERIFY2(copied.err.contains("warning:"), qPrintable(copied.describe()));
        for (const auto& value : report.value(QStringLiteral("storages")).toArray())
            QCOMPARE(value.toObject().value(QStringLiteral("planned")).toString(), QStringLiteral("cpu"));
        QCOMPARE(entriesOf(dir.filePath(QStringLiteral("out"))),
            QStringList {QStringLiteral("whole_model-cpu.pt")});
        QCOMPARE(unsafeNamesOf(out), unsafeNamesOf(original));
        const InfoReport written = readInfo(out);
        for (const auto& [key, device] : std::as_const(written.storages))
            QVERIFY2(device == QStringLiteral("cpu"), qPrintable(key + u' ' + device));
        QCOMPARE(sha256Of(original), before);

        // The text says it plainly, naming the callables.
        const QString text = dir.filePath(QStringLiteral("out/text.pt"));
        const Run said = runInspector({QStringLiteral("remap"), original, QStringLiteral("-o"), text,
            QStringLiteral("--map"), QStringLiteral("cuda:1=cpu"), QStringLiteral("--allow-dangerous")});
        QVERIFY2(said.exitCode == 0 && said.out.contains("still DANGEROUS")
                && said.out.contains("exactly as dangerous as the input")
                && said.out.contains("gpunets.blocks.GpuNet"),
            qPrintable(said.describe()));

        // Real torch, both releases: plain torch.load (no map_location) of the copy on this CPU
        // machine gives the model, every tensor on the CPU, bytes identical.
        for (const QString& judge :
            {QStringLiteral(CKPT_LEGACY_PYTHON), QStringLiteral(CKPT_MODERN_PYTHON)}) {
            if (judge.isEmpty())
                continue;
            const Run loaded = runProgram(judge, {kCheckGpuModel, original, out, expected});
            QVERIFY2(loaded.exitCode == 0 && loaded.out.startsWith("ok "), qPrintable(loaded.describe()));
            qInfo("%s", loaded.out.trimmed().constData());
        }
    }

    // The same for a folder of .bin shards (from_pretrained's layout) whose second shard holds the
    // user's tensor subclass: refused naming the override and convert (extract takes one file);
    // with --allow-dangerous, a remapped folder, every shard rated like its input, loaded by real
    // torch. (Before issue 24 the refusal suggested --allow-dangerous, which then refused folders.)
    void dangerousShardFolderRemapsWithOverride_data() { dangerousWholeModelRemapsWithOverride_data(); }

    void dangerousShardFolderRemapsWithOverride()
    {
        QFETCH(QString, writer);
        if (writer.isEmpty())
            QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty)");
        QTemporaryDir dir(m_work.filePath(QStringLiteral("shards-XXXXXX")));
        QVERIFY(dir.isValid());
        const Run made = runProgram(writer, {kMakeGpuModel, dir.path()});
        QVERIFY2(made.exitCode == 0, qPrintable(made.describe()));
        const QString original = dir.filePath(QStringLiteral("shards"));
        const QString expected = dir.filePath(QStringLiteral("shards.expected.json"));
        const InfoReport info = readInfo(original);
        QCOMPARE(info.safety, QStringLiteral("dangerous"));
        QVERIFY(unsafeNamesOf(original).contains(QStringLiteral("gpunets.blocks.ScaledTensor")));

        const QString out = dir.filePath(QStringLiteral("remapped"));
        const Run refused = runInspector({QStringLiteral("remap"), original, QStringLiteral("-o"), out,
            QStringLiteral("--map"), QStringLiteral("cuda:1=cpu")});
        QCOMPARE(refused.exitCode, 4);
        QVERIFY2(refused.err.contains("--allow-dangerous") && refused.err.contains("ckpt-inspect convert"),
            qPrintable(refused.describe()));
        QVERIFY(!QFileInfo::exists(out));

        const Run copied = runInspector(
            {QStringLiteral("remap"), original, QStringLiteral("-o"), out, QStringLiteral("--map"),
                QStringLiteral("cuda:1=cpu"), QStringLiteral("--allow-dangerous"), QStringLiteral("--json")});
        QVERIFY2(copied.exitCode == 0, qPrintable(copied.describe()));
        const QJsonObject report = parseObject(copied.out);
        QVERIFY(report.value(QStringLiteral("as_dangerous_as_input")).toBool());
        QCOMPARE(report.value(QStringLiteral("shards")).toArray().size(), 2);
        QCOMPARE(unsafeNamesOf(out), unsafeNamesOf(original));
        const InfoReport written = readInfo(out);
        for (const auto& [key, device] : std::as_const(written.storages))
            QVERIFY2(device == QStringLiteral("cpu"), qPrintable(key + u' ' + device));
        for (const QString& judge :
            {QStringLiteral(CKPT_LEGACY_PYTHON), QStringLiteral(CKPT_MODERN_PYTHON)}) {
            if (judge.isEmpty())
                continue;
            const Run loaded = runProgram(judge, {kCheckGpuModel, original, out, expected});
            QVERIFY2(loaded.exitCode == 0 && loaded.out.startsWith("ok "), qPrintable(loaded.describe()));
            qInfo("%s", loaded.out.trimmed().constData());
        }
    }

    void cuda1CheckpointLoadsAfterRemap_data()
    {
        QTest::addColumn<QString>("checkpoint");
        QTest::addColumn<QString>("interpreter");
        for (const QString& version : {QStringLiteral("torch-1.13"), QStringLiteral("torch-2")}) {
            const QString file = fixturesDir() + u'/' + version + QStringLiteral("/devices_cuda1.pt");
            QTest::newRow(qPrintable(version + QStringLiteral(" file, torch 1.13")))
                << file << QStringLiteral(CKPT_LEGACY_PYTHON);
            QTest::newRow(qPrintable(version + QStringLiteral(" file, modern torch")))
                << file << QStringLiteral(CKPT_MODERN_PYTHON);
        }
    }

    // The headline: every storage recorded on cuda:1; plain torch.load refuses it on this CPU-only
    // machine with torch's own message; `remap --map '*=cpu'` makes a copy that plain torch.load
    // opens, with every tensor equal to the original's.
    void cuda1CheckpointLoadsAfterRemap()
    {
        QFETCH(QString, checkpoint);
        QFETCH(QString, interpreter);
        if (interpreter.isEmpty())
            QSKIP("no modern torch configured (CKPT_MODERN_PYTHON is empty)");
        QTemporaryDir dir(m_work.filePath(QStringLiteral("cuda1-XXXXXX")));
        const QString copy = dir.filePath(QStringLiteral("devices_cuda1.pt"));
        const Run remap = runInspector({QStringLiteral("remap"), checkpoint, QStringLiteral("-o"), copy,
            QStringLiteral("--map"), QStringLiteral("*=cpu")});
        QVERIFY2(remap.exitCode == 0, qPrintable(remap.describe()));
        const Run torch = runProgram(interpreter, {kHeadline, checkpoint, copy});
        const QString text = QString::fromUtf8(torch.out);
        if (text.startsWith(QStringLiteral("SKIP")))
            QSKIP("this machine has CUDA: torch would load the original");
        QVERIFY2(torch.exitCode == 0, qPrintable(torch.describe()));
        QVERIFY2(text.contains(QStringLiteral("Attempting to deserialize object on a CUDA device")),
            qPrintable(text));
        QVERIFY2(
            text.contains(QStringLiteral(": 11 tensors on cpu, equal to the original's")), qPrintable(text));
        qInfo("%s", qPrintable(text.trimmed()));
    }

    // ---- faults: a clear message, exit 2, the input untouched, nothing at the target ----------

    void refusesUnwritableFolder()
    {
        // A folder only its owner may write to; root ignores permissions, so root runs the tool as
        // `nobody`, and anyone else simply does not own the folder's write bit.
        QTemporaryDir base(QStringLiteral("/tmp/ckpt-remap-perm-XXXXXX"));
        QVERIFY(base.isValid());
        const QString input = base.filePath(QStringLiteral("state_dict.pt"));
        QVERIFY(QFile::copy(fixturesDir() + QStringLiteral("/torch-2/state_dict.pt"), input));
        const QString locked = base.filePath(QStringLiteral("locked"));
        QVERIFY(QDir().mkdir(locked));
        const auto readable = QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup
            | QFile::ExeGroup | QFile::ReadOther | QFile::ExeOther;
        QVERIFY(QFile::setPermissions(base.path(), readable));
        QVERIFY(QFile::setPermissions(
            input, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther));
        const bool root = geteuid() == 0;
        QVERIFY(QFile::setPermissions(locked, root ? readable : (readable & ~QFile::WriteOwner)));
        const QString output = locked + QStringLiteral("/copy.pt");
        const QByteArray before = sha256Of(input);
        QStringList arguments {QStringLiteral("remap"), input, QStringLiteral("-o"), output,
            QStringLiteral("--map"), QStringLiteral("*=cpu")};
        Run run;
        if (root)
            run = runProgram(QStringLiteral("setpriv"),
                QStringList {QStringLiteral("--reuid=nobody"), QStringLiteral("--regid=nogroup"),
                    QStringLiteral("--clear-groups"), QStringLiteral(CKPT_INSPECT_BINARY)}
                    + arguments);
        else
            run = runInspector(arguments);
        QVERIFY2(run.exitCode == 2, qPrintable(run.describe()));
        const QString message = QString::fromUtf8(run.err);
        QVERIFY2(message.contains(QStringLiteral("ermission")) || message.contains(QStringLiteral("writ")),
            qPrintable(message));
        QVERIFY2(!QFile::exists(output), "a file was left at the target");
        QVERIFY2(entriesOf(locked).isEmpty(), qPrintable(entriesOf(locked).join(u',')));
        QCOMPARE(sha256Of(input), before);
    }

    void fileSizeLimitFailsCleanly()
    {
        // many_tensors.pt is ~600 KiB; `ulimit -f 8` allows a few KiB. The tool ignores SIGXFSZ
        // and must report the failed write, remove its temporary file and leave no target.
        const QString input = fixturesDir() + QStringLiteral("/torch-2/many_tensors.pt");
        QVERIFY(QFileInfo(input).size() > qint64 {64} * 1024);
        QTemporaryDir dir(m_work.filePath(QStringLiteral("ulimit-XXXXXX")));
        const QString output = dir.filePath(QStringLiteral("copy.pt"));
        const QByteArray before = sha256Of(input);
        const Run run = runProgram(QStringLiteral("/bin/sh"),
            {QStringLiteral("-c"),
                QStringLiteral("ulimit -f 8; exec \"$0\" remap \"$1\" -o \"$2\" --map '*=cpu'"),
                QStringLiteral(CKPT_INSPECT_BINARY), input, output});
        QVERIFY2(run.exitCode == 2, qPrintable(run.describe()));
        const QString message = QString::fromUtf8(run.err).toLower();
        QVERIFY2(message.contains(QStringLiteral("too large")) || message.contains(QStringLiteral("limit"))
                || message.contains(QStringLiteral("size")),
            qPrintable(message));
        QVERIFY2(!QFile::exists(output), "a file was left at the target");
        QVERIFY2(entriesOf(dir.path()).isEmpty(),
            qPrintable(QStringLiteral("left behind: ") + entriesOf(dir.path()).join(u',')));
        QCOMPARE(sha256Of(input), before);
    }

    void refusesToWriteOverItsInput_data()
    {
        QTest::addColumn<QString>("how");
        QTest::newRow("same path") << QStringLiteral("same");
        QTest::newRow("same file through ..") << QStringLiteral("dotdot");
        QTest::newRow("symlink to the input") << QStringLiteral("symlink");
        QTest::newRow("hard link to the input") << QStringLiteral("hardlink");
    }

    void refusesToWriteOverItsInput()
    {
        QFETCH(QString, how);
        QTemporaryDir dir(m_work.filePath(QStringLiteral("self-XXXXXX")));
        QVERIFY(QDir().mkdir(dir.filePath(QStringLiteral("sub"))));
        const QString input = dir.filePath(QStringLiteral("devices_cuda1.pt"));
        QVERIFY(QFile::copy(fixturesDir() + QStringLiteral("/torch-2/devices_cuda1.pt"), input));
        QString output = input;
        if (how == QStringLiteral("dotdot")) {
            output = dir.filePath(QStringLiteral("sub/../devices_cuda1.pt"));
        } else if (how == QStringLiteral("symlink")) {
            output = dir.filePath(QStringLiteral("link.pt"));
            QVERIFY(QFile::link(input, output));
        } else if (how == QStringLiteral("hardlink")) {
            output = dir.filePath(QStringLiteral("hard.pt"));
            QVERIFY(::link(QFile::encodeName(input).constData(), QFile::encodeName(output).constData()) == 0);
        }
        const QStringList entriesBefore = entriesOf(dir.path());
        const QByteArray before = sha256Of(input);
        const Run run = runInspector({QStringLiteral("remap"), input, QStringLiteral("-o"), output,
            QStringLiteral("--map"), QStringLiteral("*=cpu")});
        QVERIFY2(run.exitCode == 2, qPrintable(run.describe()));
        QVERIFY2(QString::fromUtf8(run.err).contains(QStringLiteral("input")),
            qPrintable(QString::fromUtf8(run.err)));
        QCOMPARE(sha256Of(input), before);
        QCOMPARE(entriesOf(dir.path()), entriesBefore);
        if (how == QStringLiteral("symlink"))
            QVERIFY(QFileInfo(output).isSymLink());
    }

    void missingOutputFolder()
    {
        QTemporaryDir dir(m_work.filePath(QStringLiteral("missing-XXXXXX")));
        const QString output = dir.filePath(QStringLiteral("no/such/folder/copy.pt"));
        const Run run
            = runInspector({QStringLiteral("remap"), fixturesDir() + QStringLiteral("/torch-2/state_dict.pt"),
                QStringLiteral("-o"), output, QStringLiteral("--map"), QStringLiteral("*=cpu")});
        QVERIFY2(run.exitCode == 2, qPrintable(run.describe()));
        QVERIFY2(QString::fromUtf8(run.err).contains(QStringLiteral("no/such/folder")),
            qPrintable(QString::fromUtf8(run.err)));
        QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("no"))));
    }

    void usageErrors()
    {
        const QString input = fixturesDir() + QStringLiteral("/torch-2/state_dict.pt");
        const QString output = m_work.filePath(QStringLiteral("usage.pt"));
        QCOMPARE(runInspector({QStringLiteral("remap")}).exitCode, 64);
        QCOMPARE(runInspector({QStringLiteral("remap"), input}).exitCode, 64); // no -o
        QCOMPARE(runInspector({QStringLiteral("remap"), input, QStringLiteral("-o")}).exitCode, 64);
        QCOMPARE(runInspector({QStringLiteral("remap"), input, QStringLiteral("-o"), output,
                                  QStringLiteral("--map"), QStringLiteral("cuda:1")})
                     .exitCode,
            64);
        QCOMPARE(runInspector({QStringLiteral("remap"), input, QStringLiteral("-o"), output,
                                  QStringLiteral("--frobnicate")})
                     .exitCode,
            64);
        QVERIFY(!QFile::exists(output));
    }
};

QTEST_GUILESS_MAIN(TestRemapCommand)
#include "tst_remap.moc"
