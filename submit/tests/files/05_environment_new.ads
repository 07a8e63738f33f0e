Dry-Run job(s)
ClusterId=1
In="/dev/null"
Cmd="/bin/env"
Err="/dev/null"
Iwd="/srv/aerie-submit-files/files"
Out="/dev/null"
Rank=0.0
Owner=undefined
QDate=1795677339
MyType="Job"
JobPrio=0
MaxHosts=1
MinHosts=1
NumCkpts=0
Arguments=""
DiskUsage=55
ImageSize=55
ExitStatus=0
TargetType="Machine"
TransferIn=false
Environment="A=1 B=two' 'words C=\"q\""
JobUniverse=5
NumRestarts=0
RequestCpus=1
RequestDisk=DiskUsage
TransferErr=false
TransferOut=false
CurrentHosts=0
ExitBySignal=false
NumJobStarts=0
RemoteSysCpu=0.0
Requirements=(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
CommittedTime=0
CondorVersion="$CondorVersion: 23.9.6 2026-07-12 PackageID: 23.9.6+dfsg-2.1+b10 $"
JobSubmitFile="05_environment_new.sub"
RemoteUserCpu=0.0
RequestMemory=ifthenelse(MemoryUsage =!= undefined,MemoryUsage,(ImageSize + 1023) / 1024)
CondorPlatform="$CondorPlatform: X86_64-Debian_13 $"
ExecutableSize=55
NumSystemHolds=0
JobNotification=0
JobSubmitMethod=0
LeaveJobInQueue=false
FileSystemDomain="ref.test"
JobLeaseDuration=2400
TotalSuspensions=0
CommittedSlotTime=0
NumJobCompletions=0
CumulativeSlotTime=0
LastSuspensionTime=0
RemoteWallClockTime=0.0
ShouldTransferFiles="IF_NEEDED"
TransferInputSizeMB=0
EnteredCurrentStatus=1795677339
WhenToTransferOutput="ON_EXIT"
CumulativeRemoteSysCpu=0.0
CommittedSuspensionTime=0
CumulativeRemoteUserCpu=0.0
CumulativeSuspensionTime=0
ProcId=0
JobStatus=1
.
1 job(s) dry-run to cluster 1.
