// SPDX-License-Identifier: MIT
#pragma once
// Shared by the command-line tests: run the real ckpt-inspect binary and compare its JSON with
// what torch computed for the same file.
#include "core/json/json.h"
#include "tests/common/programrun.h"
#include "tests/common/testfiles.h"

#include <QFile>
#include <QProcess>
#include <QTest>

#include <map>
#include <set>

using namespace ckpt;

namespace fixturecomparison {

using CommandResult = ckpt::testing::ProgramRun;
using ckpt::testing::runProgram;
using ckpt::testing::sha256Of;

inline CommandResult runInspect(const QStringList& arguments)
{
    return runProgram(QStringLiteral(CKPT_INSPECT_BINARY), arguments, 120'000);
}

inline QString describe(const CommandResult& result)
{
    return result.describe();
}

inline JsonValue parse(const QByteArray& text)
{
    auto parsed = parseJson(std::string_view(text.constData(), static_cast<std::size_t>(text.size())));
    return parsed ? *parsed : JsonValue();
}

inline QString fixturesDir()
{
    return ckpt::testing::sourcePath(QStringLiteral("tests/fixtures"));
}

inline QString show(const JsonValue& value)
{
    return QString::fromStdString(value.toJson());
}

} // namespace fixturecomparison
using namespace fixturecomparison;

// Runs `ckpt-inspect info --json CHECKPOINT` and compares it field by field with EXPECTED, the
// JSON torch computed for the same file (tests/fixtures/README.md). Fails the current test.
// `allowedCodes`: finding codes (json ids) the file is expected to carry besides info findings.
inline void compareWithTorch(
    const QString& checkpoint, const QString& expected, const std::set<std::string>& allowedCodes = {})
{
    QFile expectedFile(expected);
    QVERIFY(expectedFile.open(QIODevice::ReadOnly));
    const JsonValue truth = parse(expectedFile.readAll());
    QVERIFY2(truth.isObject(), "the expectation is not valid JSON");

    const CommandResult result = runInspect({QStringLiteral("info"), QStringLiteral("--json"), checkpoint});
    // (info exits 1 when the file has warnings: expected ones are allowed.)
    QVERIFY2(result.exitCode == 0 || (result.exitCode == 1 && !allowedCodes.empty()),
        qPrintable(u"exit code "_qs + QString::number(result.exitCode) + u": "_qs
            + QString::fromUtf8(result.out.right(2000)) + QString::fromUtf8(result.err)));
    const JsonValue ours = parse(result.out);
    QVERIFY2(ours.isObject(), "ckpt-inspect did not print valid JSON");
    QCOMPARE(ours.member("format").toString(), truth.member("format").toString());
    const bool torchScript = truth.member("format").toString().starts_with("torchscript");

    std::map<std::string, const JsonValue*> ourTensors;
    for (const JsonValue& tensor : ours.member("tensors").items())
        ourTensors[tensor.member("name").toString()] = &tensor;
    std::set<std::string> expectedNames;
    std::map<std::string, std::string> groupToKey, keyToGroup;
    for (const JsonValue& want : truth.member("tensors").items()) {
        const std::string name = want.member("name").toString();
        expectedNames.insert(name);
        auto it = ourTensors.find(name);
        QVERIFY2(it != ourTensors.end(),
            qPrintable(u"tensor missing: '"_qs + QString::fromStdString(name) + u"'"_qs));
        const JsonValue& got = *it->second;
        for (const char* field :
            {"dtype", "shape", "stride", "storage_offset", "device", "requires_grad", "layout"}) {
            QVERIFY2(got.member(field) == want.member(field),
                qPrintable(QString::fromStdString(name) + u": "_qs + QString::fromLatin1(field) + u" is "_qs
                    + show(got.member(field)) + u", torch says "_qs + show(want.member(field))));
        }
        if (!torchScript) // torch.jit.load cannot tell Parameters from tensors (see README)
            QVERIFY2(got.member("is_parameter") == want.member("is_parameter"),
                qPrintable(QString::fromStdString(name) + u": is_parameter differs"_qs));
        if (!want.member("storage").isNull())
            QVERIFY2(got.member("storage") == want.member("storage"),
                qPrintable(QString::fromStdString(name) + u": storage "_qs + show(got.member("storage"))
                    + u", torch says "_qs + show(want.member("storage"))));
        // Tensors share a storage in our reading exactly when they share one in torch's.
        const JsonValue& group = want.member("storage_group");
        if (group.isNull()) {
            QVERIFY2(got.member("storage").isNull(),
                qPrintable(QString::fromStdString(name) + u" should have no storage"_qs));
            continue;
        }
        const std::string key = got.member("storage").toString();
        QVERIFY2(!got.member("storage").isNull(),
            qPrintable(QString::fromStdString(name) + u" has no storage"_qs));
        auto [g, newGroup] = groupToKey.emplace(group.toString(), key);
        QVERIFY2(g->second == key,
            qPrintable(QString::fromStdString(name)
                + u": torch shares its storage with another tensor, we do not"_qs));
        auto [k, newKey] = keyToGroup.emplace(key, group.toString());
        QVERIFY2(k->second == group.toString(),
            qPrintable(QString::fromStdString(name) + u": we share storage "_qs + QString::fromStdString(key)
                + u" that torch keeps apart"_qs));
    }
    for (const auto& [name, tensor] : ourTensors) {
        if (expectedNames.count(name))
            continue;
        // TorchScript's constants and traced inputs are not module attributes, so torch's
        // state_dict-based expectation cannot list them.
        const bool allowed = torchScript
            && (name.starts_with("constants.") || name.starts_with("traced_inputs.")
                || name.starts_with("bytecode."));
        QVERIFY2(allowed,
            qPrintable(u"tensor torch does not have: '"_qs + QString::fromStdString(name) + u"'"_qs));
    }

    // Storages: with keys, field by field; TorchScript (keys unknown to torch): as a multiset.
    std::map<std::string, const JsonValue*> ourStorages;
    for (const JsonValue& storage : ours.member("storages").items())
        ourStorages[storage.member("key").toString()] = &storage;
    std::multiset<std::string> wantedAnonymous, gotAnonymous;
    for (const JsonValue& want : truth.member("storages").items()) {
        auto describe = [](const JsonValue& s) {
            return s.member("dtype").toString() + "/" + s.member("numel").toJson() + "/"
                + s.member("nbytes").toJson() + "/" + s.member("device").toJson();
        };
        if (want.member("key").isNull()) {
            wantedAnonymous.insert(describe(want));
            continue;
        }
        auto it = ourStorages.find(want.member("key").toString());
        QVERIFY2(it != ourStorages.end(), qPrintable(u"storage missing: "_qs + show(want.member("key"))));
        for (const char* field : {"dtype", "numel", "nbytes", "device"})
            QVERIFY2(it->second->member(field) == want.member(field),
                qPrintable(u"storage "_qs + show(want.member("key")) + u": "_qs + QString::fromLatin1(field)
                    + u" is "_qs + show(it->second->member(field)) + u", torch says "_qs
                    + show(want.member(field))));
    }
    if (!wantedAnonymous.empty()) {
        for (const auto& [key, group] : keyToGroup) {
            const JsonValue& s = *ourStorages[key];
            gotAnonymous.insert(s.member("dtype").toString() + "/" + s.member("numel").toJson() + "/"
                + s.member("nbytes").toJson() + "/" + s.member("device").toJson());
        }
        QVERIFY(gotAnonymous == wantedAnonymous);
    } else {
        QCOMPARE(ours.member("storages").size(), truth.member("storages").size());
    }
    for (const JsonValue& finding : ours.member("findings").items())
        QVERIFY2(finding.member("severity").toString() == "info"
                || allowedCodes.count(finding.member("code").toString()),
            qPrintable(u"a clean torch file got a finding: "_qs
                + QString::fromStdString(finding.member("message").toString())));
}
