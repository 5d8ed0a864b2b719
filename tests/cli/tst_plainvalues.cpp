// SPDX-License-Identifier: MIT
// `extract --plain-values`, judged by real torch: the NumPy fixtures of tests/fixtures/dtype-cast
// (written by torch 2.14 with NumPy 2, pickle protocols 2 and 4: scalars and arrays of every dtype,
// Fortran order, big-endian, 0-d, empty, a dict of values, strings and objects) are extracted, and
// every copy must load with torch.load(weights_only=True) and no allowlisting in torch 1.13 (which
// has no NumPy at all) and in torch 2.14, holding the values the real unpickler read from the input
// (tests/extract/check_plain_values.py, one run per torch).
#include "fixturecomparison.h"

#include <QFileInfo>
#include <QTemporaryDir>

namespace {

QString numpyFixture(const QString& name)
{
    return fixturesDir() + u"/dtype-cast/"_qs + name;
}

} // namespace

class TestPlainValues : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

private Q_SLOTS:
    void copiesLoadWithWeightsOnlyInBothTorches()
    {
        QVERIFY(m_dir.isValid());
        struct Job {
            QString fixture, output, cast;
        };
        const std::vector<Job> jobs {{u"numpy-values-p2.pt"_qs, u"p2.pt"_qs, {}},
            {u"numpy-values-p4.pt"_qs, u"p4.pt"_qs, {}},
            {u"numpy-values-p4.pt"_qs, u"p4-bf16.pt"_qs, u"bfloat16"_qs},
            {u"numpy-values-p2.pt"_qs, u"p2-f16.pt"_qs, u"float16"_qs}};
        QString list = u"["_qs;
        for (const Job& job : jobs) {
            const QString output = m_dir.filePath(job.output);
            QStringList arguments {
                u"extract"_qs, numpyFixture(job.fixture), u"-o"_qs, output, u"--plain-values"_qs};
            if (!job.cast.isEmpty())
                arguments << u"--dtype"_qs << job.cast;
            const CommandResult written = runInspect(arguments);
            QVERIFY2(written.exitCode == 0, qPrintable(describe(written)));
            QVERIFY2(written.out.contains("NumPy values as plain values"), written.out.constData());
            if (list.size() > 1)
                list += u","_qs;
            list += u"{\"output\":\"%1\",\"expected\":\"%2\",\"cast\":%3}"_qs.arg(output,
                numpyFixture(job.fixture) + u".expected.json"_qs,
                job.cast.isEmpty() ? u"null"_qs : u"\""_qs + job.cast + u"\""_qs);
        }
        list += u"]"_qs;
        const QString jobsFile = m_dir.filePath(u"jobs.json"_qs);
        QFile file(jobsFile);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(list.toUtf8());
        file.close();
        const QString checker = QStringLiteral(CKPT_SOURCE_DIR "/tests/extract/check_plain_values.py");
        QStringList judges {QStringLiteral(CKPT_LEGACY_PYTHON)};
        if (!QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            judges << QStringLiteral(CKPT_MODERN_PYTHON);
        else
            qWarning("no modern torch (CKPT_MODERN_PYTHON): only torch 1.13 judges the copies");
        for (const QString& judge : judges) {
            const CommandResult checked = runProgram(judge, {checker, jobsFile}, 600'000);
            QVERIFY2(checked.exitCode == 0, qPrintable(judge + u": "_qs + describe(checked)));
            QCOMPARE(checked.out.count("ok "), static_cast<qsizetype>(jobs.size()));
        }
    }

    void saysWhatItWroteAndWhatItLeft()
    {
        const CommandResult result = runInspect({u"extract"_qs, numpyFixture(u"numpy-values-p2.pt"_qs),
            u"-o"_qs, m_dir.filePath(u"said.pt"_qs), u"--plain-values"_qs, u"--json"_qs});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue report = parse(result.out);
        std::map<std::string, std::string> written;
        for (const JsonValue& item : report.member("plain_values").items())
            written[item.member("path").toString()] = item.member("what").toString();
        QCOMPARE(written["s_int8"], std::string("numpy.int8 scalar -> int"));
        QCOMPARE(written["s_float32"], std::string("numpy.float32 scalar -> 0-d tensor float32"));
        QCOMPARE(written["a_float32_fortran"], std::string("numpy.float32 array -> tensor float32"));
        QCOMPARE(written["a_uint32"], std::string("numpy.uint32 array -> list of int"));
        QCOMPARE(written["metrics.loss"], std::string("numpy.float32 scalar -> 0-d tensor float32"));
        std::map<std::string, std::string> dropped;
        for (const JsonValue& item : report.member("dropped_objects").items())
            dropped[item.member("path").toString()] = item.member("what").toString();
        QVERIFY2(
            dropped["x_strings"].find("holds no plain numbers") != std::string::npos, result.out.constData());
        QVERIFY2(
            dropped["x_objects"].find("holds no plain numbers") != std::string::npos, result.out.constData());

        // Without the option the NumPy values are dropped, as before.
        const CommandResult plain = runInspect({u"extract"_qs, numpyFixture(u"numpy-values-p2.pt"_qs),
            u"-o"_qs, m_dir.filePath(u"without.pt"_qs), u"--json"_qs});
        QVERIFY2(plain.exitCode == 0, qPrintable(describe(plain)));
        QVERIFY(parse(plain.out).member("plain_values").items().empty());
    }

    void safetensorsOutputRefusesIt()
    {
        const QString output = m_dir.filePath(u"refused.safetensors"_qs);
        const CommandResult result = runInspect(
            {u"convert"_qs, numpyFixture(u"numpy-values-p4.pt"_qs), u"-o"_qs, output, u"--plain-values"_qs});
        QCOMPARE(result.exitCode, 64);
        QVERIFY2(result.err.contains("--plain-values"), result.err.constData());
        QVERIFY(!QFileInfo::exists(output));
    }
};

QTEST_GUILESS_MAIN(TestPlainValues)
#include "tst_plainvalues.moc"
