// SPDX-License-Identifier: MIT
// `convert` and `extract` with --dtype, judged by real torch: the fixtures of
// tests/fixtures/dtype-cast (written by torch 1.13 and 2.14: every float16 and bfloat16 bit
// pattern, random float32/float64 bits, ties, overflow, views, tied weights, non-float tensors) are
// copied to bfloat16, float16 and float32 as state_dicts and safetensors, and every copy is compared
// with torch's own `.to(dtype)` of the input bit for bit, loaded with weights_only=True, by one
// interpreter run per torch (tests/convert/check_dtype_cast.py).
#include "fixturecomparison.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

namespace {

QString castFixture(const QString& name)
{
    return fixturesDir() + u"/dtype-cast/"_qs + name;
}

} // namespace

class TestDtypeCast : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

private Q_SLOTS:
    void copiesEqualTorchsConversionInBothTorches()
    {
        QVERIFY(m_dir.isValid());
        struct Job {
            QString command, input, output;
            bool torch2; // holds float8, which torch 1.13 cannot load
        };
        std::vector<Job> jobs;
        for (const QString& to : {u"bfloat16"_qs, u"float16"_qs, u"float32"_qs}) {
            jobs.push_back(
                {u"extract"_qs, castFixture(u"floats-1.13.pt"_qs), u"e113-"_qs + to + u".pt"_qs, false});
            jobs.push_back({u"extract"_qs, castFixture(u"floats-2.pt"_qs), u"e2-"_qs + to + u".pt"_qs, true});
            jobs.push_back(
                {u"convert"_qs, castFixture(u"floats.safetensors"_qs), u"st-"_qs + to + u".pt"_qs, false});
            jobs.push_back(
                {u"convert"_qs, castFixture(u"floats-2.pt"_qs), u"c2-"_qs + to + u".safetensors"_qs, true});
            jobs.push_back({u"convert"_qs, castFixture(u"floats-1.13.pt"_qs),
                u"c113-"_qs + to + u".safetensors"_qs, false});
        }
        QString list = u"["_qs;
        for (const Job& job : jobs) {
            const QString to = job.output.section(u'-', 1).section(u'.', 0, 0);
            const QString output = m_dir.filePath(job.output);
            const CommandResult written
                = runInspect({job.command, job.input, u"-o"_qs, output, u"--dtype"_qs, to});
            QVERIFY2(written.exitCode == 0, qPrintable(describe(written)));
            QVERIFY2(written.out.contains(QByteArray(QByteArray("cast to ") + to.toUtf8())),
                written.out.constData());
            QVERIFY2(written.out.contains("verified"), written.out.constData());
            if (list.size() > 1)
                list += u","_qs;
            list += u"{\"input\":\"%1\",\"output\":\"%2\",\"to\":\"%3\",\"torch2\":%4}"_qs.arg(
                job.input, output, to, job.torch2 ? u"true"_qs : u"false"_qs);
        }
        list += u"]"_qs;
        const QString jobsFile = m_dir.filePath(u"jobs.json"_qs);
        QFile file(jobsFile);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(list.toUtf8());
        file.close();

        const QString checker = QStringLiteral(CKPT_SOURCE_DIR "/tests/convert/check_dtype_cast.py");
        struct Judge {
            QString program;
            int mustCheck; // copies this torch loads (1.13: those without float8)
        };
        std::vector<Judge> judges {{QStringLiteral(CKPT_LEGACY_PYTHON), 9}};
        if (!QStringLiteral(CKPT_MODERN_PYTHON).isEmpty())
            judges.push_back({QStringLiteral(CKPT_MODERN_PYTHON), static_cast<int>(jobs.size())});
        else
            qWarning("no modern torch (CKPT_MODERN_PYTHON): only torch 1.13 judges the copies");
        for (const Judge& judge : judges) {
            // The NaN bits follow torch 2.14's (torch 1.13 writes float16 NaN without payload).
            const CommandResult checked
                = runProgram(judge.program, {checker, jobsFile, u"--strict-nan-from"_qs, u"2."_qs}, 600'000);
            QVERIFY2(checked.exitCode == 0, qPrintable(judge.program + u": "_qs + describe(checked)));
            QCOMPARE(checked.out.count("\nok ") + (checked.out.startsWith("ok ") ? 1 : 0), judge.mustCheck);
        }
    }

    void saysWhatItCastAndWhatItLeft()
    {
        const QString output = m_dir.filePath(u"said.pt"_qs);
        const CommandResult result = runInspect({u"extract"_qs, castFixture(u"floats-2.pt"_qs), u"-o"_qs,
            output, u"--dtype"_qs, u"float16"_qs, u"--json"_qs});
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue report = parse(result.out);
        const JsonValue& dtype = report.member("dtype");
        QCOMPARE(dtype.member("to").toString(), std::string("float16"));
        std::set<std::string> cast;
        for (const JsonValue& item : dtype.member("tensors_cast").items())
            cast.insert(item.toString());
        QVERIFY(
            cast.count("tied.encoder (float64 -> float16)") && cast.count("view.slice (float32 -> float16)"));
        QVERIFY(cast.count("bf16.all (bfloat16 -> float16)"));
        for (const std::string& name : cast)
            QVERIFY2(!name.starts_with("ints.") && !name.starts_with("bool") && !name.starts_with("complex")
                    && !name.starts_with("half.weight") && !name.starts_with("float8"),
                name.c_str());
        QCOMPARE(dtype.member("not_cast").items().size(), std::size_t(1));
        QCOMPARE(dtype.member("not_cast").items()[0].member("path").toString(), std::string("float8"));
        // Tied weights and views still share one storage each.
        std::map<std::string, std::string> storageOf;
        for (const JsonValue& tensor : report.member("tensors").items())
            storageOf[tensor.member("name").toString()] = tensor.member("storage").toString();
        QCOMPARE(storageOf["tied.encoder"], storageOf["tied.decoder"]);
        QCOMPARE(storageOf["view.full"], storageOf["view.slice"]);
        QCOMPARE(storageOf["view.full"], storageOf["view.t"]);

        // Without --dtype nothing is cast, and the JSON says so.
        const CommandResult plain = runInspect({u"extract"_qs, castFixture(u"floats-2.pt"_qs), u"-o"_qs,
            m_dir.filePath(u"plain.pt"_qs), u"--json"_qs});
        QVERIFY2(plain.exitCode == 0, qPrintable(describe(plain)));
        QVERIFY(parse(plain.out).member("dtype").isNull());
    }

    void refusesOtherDtypes()
    {
        const QString output = m_dir.filePath(u"refused.pt"_qs);
        const CommandResult result = runInspect({u"extract"_qs, castFixture(u"floats-2.pt"_qs), u"-o"_qs,
            output, u"--dtype"_qs, u"float8_e4m3fn"_qs});
        QVERIFY(result.exitCode != 0);
        QVERIFY2(result.err.contains("--dtype"), result.err.constData());
        QVERIFY(!QFileInfo::exists(output));
    }

    void truncatedInputWritesNothing()
    {
        // The 1.13 file cut in the middle of its storages: the reader says what is missing, and a
        // cast of bytes that are not there is never guessed.
        QFile whole(castFixture(u"floats-1.13.pt"_qs));
        QVERIFY(whole.open(QIODevice::ReadOnly));
        const QByteArray bytes = whole.readAll();
        const QString cut = m_dir.filePath(u"cut.pt"_qs);
        QFile out(cut);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(bytes.left(150000)); // inside the second storage
        out.close();
        const QString output = m_dir.filePath(u"cut-bf16.pt"_qs);
        const CommandResult result
            = runInspect({u"extract"_qs, cut, u"-o"_qs, output, u"--dtype"_qs, u"bfloat16"_qs, u"--json"_qs});
        // What could be read is written (the first storage, cast); every tensor whose bytes are
        // missing is named.
        QVERIFY2(result.exitCode == 0, qPrintable(describe(result)));
        const JsonValue report = parse(result.out);
        QCOMPARE(report.member("dtype").member("tensors_cast").items().size(), std::size_t(1));
        QVERIFY(!report.member("dropped_tensors").items().empty());
        for (const JsonValue& item : report.member("dropped_tensors").items())
            QVERIFY2(item.member("what").toString().find("not complete") != std::string::npos,
                result.out.constData());
    }
};

QTEST_GUILESS_MAIN(TestDtypeCast)
#include "tst_dtypecast.moc"
