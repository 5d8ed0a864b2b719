// SPDX-License-Identifier: MIT
#pragma once

// Where the suites find their data and how they read and write whole files; shared by every suite
// (tests/CMakeLists.txt defines CKPT_SOURCE_DIR for each). Header-only, like the other helpers
// here, so each suite stays one executable linking only its library.

#include <QByteArray>
#include <QCryptographicHash>
#include <QFile>
#include <QString>

namespace ckpt::testing {

// A path below the source tree: sourcePath("tests/data/zip").
inline QString sourcePath(const QString& relative)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/") + relative;
}

// A fixture written by real torch (tests/fixtures/README.md): fixturePath("torch-2/devices_cuda1.pt").
inline QString fixturePath(const QString& name)
{
    return QStringLiteral(CKPT_SOURCE_DIR "/tests/fixtures/") + name;
}
inline QString fixturePath(const char* name)
{
    return fixturePath(QString::fromUtf8(name));
}

// The shared corpus of real-world checkpoints (never unpickled by anything): next to the checkout,
// or where CKPT_CORPUS_DIR says. Suites that use it skip when its files are not on the machine.
inline QString corpusDir()
{
    return qEnvironmentVariableIsEmpty("CKPT_CORPUS_DIR")
        ? QStringLiteral(CKPT_SOURCE_DIR "/../shared/corpus")
        : qEnvironmentVariable("CKPT_CORPUS_DIR");
}
inline QString corpusFilesDir()
{
    return corpusDir() + QStringLiteral("/files");
}

// A whole file, or nothing when it cannot be opened (the caller's comparison then fails with the
// path in view).
inline QByteArray readAll(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

inline bool writeAll(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size();
}

// The SHA-256 of a file in hex (empty when it cannot be read): "the input was not modified" checks.
inline QByteArray sha256Of(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(&file);
    return hash.result().toHex();
}

} // namespace ckpt::testing
